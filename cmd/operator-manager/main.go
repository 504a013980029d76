// Command operator-manager is the one binary: `run` starts the controllers; the other verbs
// are the command line for people.
package main

import (
	"os"

	"github.com/operator-manager/operator-manager/internal/cli"
)

func main() { os.Exit(cli.Execute()) }
