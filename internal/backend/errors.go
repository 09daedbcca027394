package backend

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// PoliciesRefused is an apply refused before anything changed, for what some of its
// policies say: each fails with its reason, and the others are applied without them.
type PoliciesRefused struct {
	Reasons map[string]string
}

func (e *PoliciesRefused) Error() string {
	msg := ""
	for _, name := range slices.Sorted(maps.Keys(e.Reasons)) {
		if msg != "" {
			msg += "; "
		}
		msg += fmt.Sprintf("policy %q: %s", name, e.Reasons[name])
	}
	return msg
}

// BusyError: another tool is changing the node's network (it holds NetworkManager's
// checkpoint). Nothing was changed and nobody failed: the handler says so on what waits
// and tries again soon.
type BusyError struct {
	// Reason says who holds what, and that nmoverlay leaves it alone.
	Reason string
	// Cause is the backend's own error.
	Cause error
}

func (e *BusyError) Error() string { return e.Reason }
func (e *BusyError) Unwrap() error { return e.Cause }

// ApplyError: the change did not converge and the backend rolled back what it changed
// (RollbackErr says if that failed too).
type ApplyError struct {
	Reason string
	// Interfaces are the interfaces that would not activate (a DHCP server that never
	// answered), when that is why; empty when the failure is not one interface's.
	Interfaces  []string
	RollbackErr error
	// Cause is the backend's own error, if it had one.
	Cause error
}

func (e *ApplyError) Error() string {
	if e.RollbackErr != nil {
		return e.Reason + "; ROLLBACK FAILED: " + e.RollbackErr.Error()
	}
	return e.Reason + "; rolled back"
}

func (e *ApplyError) Unwrap() error { return e.Cause }

// NothingChanged: err says the apply changed nothing (a field refused, policies refused,
// another tool busy), so there is nothing to roll back or probe.
func NothingChanged(err error) bool {
	return errors.As(err, new(*field.Error)) || errors.As(err, new(*PoliciesRefused)) || errors.As(err, new(*BusyError))
}
