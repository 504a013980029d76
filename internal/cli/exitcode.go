package cli

import (
	"errors"
	"fmt"
)

// Exit codes scripts can rely on; README.md ("Exit codes") documents them. A wait that
// ends badly is told apart from one that ran out of time and from one that stopped at a
// person's decision, because a script does something different in each case (report and
// roll forward, wait longer, ask for approval).
const (
	ExitOK = 0
	// ExitError: the verb failed: refused by the API server, an object not found, bad
	// input in a file, a catalog with rejected bundles.
	ExitError = 1
	// ExitUsage: the command line is wrong: an unknown verb or flag, a missing or extra
	// argument, a bad flag value.
	ExitUsage = 2
	// ExitFailed: --wait saw the change end badly: Failed, RolledBack, Blocked, or a
	// Subscription the catalog cannot satisfy.
	ExitFailed = 3
	// ExitTimeout: --wait ran out of --timeout before the change ended.
	ExitTimeout = 4
	// ExitHeld: --wait saw the change stop for a person: WaitingForApproval or
	// UpgradeHeld (approve it, or lift the hold).
	ExitHeld = 5
)

// exitError carries the exit code of an error up to Execute.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err // the innermost verdict stands
	}
	return &exitError{code: code, err: err}
}

func usageError(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// exitCode maps an error returned by a verb to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitError
}
