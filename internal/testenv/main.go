package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// Main starts an environment of the flavour for a test binary, runs its tests, and stops
// the environment, so that TestMain is one line:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.APIOnly, &env)) }
//
// setup runs once after the start (install CRDs, start a manager). When the environment
// cannot start, every test fails with the reason instead of being skipped: a missing
// control plane is a broken setup, not an excuse.
func Main(m *testing.M, flavour Flavour, env **Env, setup ...func(*Env) error) int {
	return MainWith(m, Options{Flavour: flavour}, env, setup...)
}

// MainWith is Main with options for the control plane (its flavour among them).
func MainWith(m *testing.M, opts Options, env **Env, setup ...func(*Env) error) int {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	if opts.Progress == nil {
		opts.Progress = os.Stderr
	}
	e, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local control plane (%s): %v\n", opts.Flavour, err)
		return 1
	}
	defer e.Stop()
	*env = e
	for _, s := range setup {
		if err := s(e); err != nil {
			fmt.Fprintf(os.Stderr, "setting up the local control plane: %v\n", err)
			return 1
		}
	}
	return m.Run()
}
