package render

import (
	"fmt"
	"slices"
	"strings"

	olm "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// TargetNamespaces decides which namespaces the operator watches, from what the
// Subscription asks and what the CSV's install modes support, as OLM's OperatorGroup
// does. An empty result means all namespaces.
func TargetNamespaces(modes []olm.InstallMode, installNS string, requested []string) ([]string, error) {
	supported := map[olm.InstallModeType]bool{}
	for _, m := range modes {
		supported[m.Type] = m.Supported
	}
	var need olm.InstallModeType
	switch {
	case len(requested) == 0:
		switch {
		case supported[olm.InstallModeTypeAllNamespaces]:
			return nil, nil
		case supported[olm.InstallModeTypeOwnNamespace]:
			return []string{installNS}, nil
		default:
			return nil, fmt.Errorf("the CSV supports neither AllNamespaces nor OwnNamespace (install modes: %s): set spec.targetNamespaces", describeModes(modes))
		}
	case len(requested) == 1 && requested[0] == installNS:
		need = olm.InstallModeTypeOwnNamespace
	case len(requested) == 1:
		need = olm.InstallModeTypeSingleNamespace
	default:
		need = olm.InstallModeTypeMultiNamespace
	}
	if !supported[need] {
		return nil, fmt.Errorf("spec.targetNamespaces %v needs install mode %s, which the CSV does not support (install modes: %s)",
			requested, need, describeModes(modes))
	}
	return requested, nil
}

// Watches says whether an operator watching targets (TargetNamespaces' answer; nil: all
// namespaces) watches namespace ns.
func Watches(targets []string, ns string) bool {
	return targets == nil || slices.Contains(targets, ns)
}

func describeModes(modes []olm.InstallMode) string {
	var s []string
	for _, m := range modes {
		if m.Supported {
			s = append(s, string(m.Type))
		}
	}
	if len(s) == 0 {
		return "none supported"
	}
	return strings.Join(s, ", ")
}
