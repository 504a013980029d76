package cli

import "github.com/operator-manager/operator-manager/internal/manager"

// controllers lists what `run` starts. Each controller package has a Setup function.
func controllers() []manager.Setup {
	return []manager.Setup{}
}
