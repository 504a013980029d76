//go:build tools

// Package tools pins Helm's version for test/fleet, which builds helm.sh/helm/v4/cmd/helm
// from this module.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
