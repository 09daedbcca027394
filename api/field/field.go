// Package field is nmoverlay's one convention for errors in what an administrator wrote: a
// policy's desired state, the helper's layout, the MachineConfig options, the deploy
// options. Each names the field's path as the API or command spells it
// (interfaces[2].vlan.id, pools[1], image, runDir) and says why. It depends on nothing
// outside the standard library, so the nm-overlay helper links it too.
package field

import (
	"fmt"
	"strings"
)

// Error is one problem with one field.
type Error struct {
	Path   string
	Reason string
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }

// Invalid is an Error about the field's value, quoted in the message.
func Invalid(path, value, reason string) *Error {
	return &Error{Path: path, Reason: fmt.Sprintf("%q %s", value, reason)}
}

// Errors are all the problems found in one input, in document order.
type Errors []*Error

func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, fe := range e {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}

// Within is the same problems, their paths inside the field prefix names
// ("spec.desiredState." + "interfaces[0].mtu").
func (e Errors) Within(prefix string) Errors {
	out := make(Errors, len(e))
	for i, fe := range e {
		out[i] = &Error{Path: prefix + fe.Path, Reason: fe.Reason}
	}
	return out
}
