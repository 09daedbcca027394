package state

import "strings"

// FieldError is one problem with a desired state, at a field path such as
// `interfaces[2].vlan.id`.
type FieldError struct {
	Path   string
	Reason string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Reason }

// Errors are all the problems found in one desired state, in document order.
type Errors []*FieldError

func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, fe := range e {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}
