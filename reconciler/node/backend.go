package node

import (
	"context"
	"fmt"
	"maps"
	"slices"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/reconciler/state"
)

// Desired is a node's whole desired state in its backend's schema, as the backend's Merge
// made it: state.State for NetworkManager's engine (nmstate's schema), the policies'
// netplan documents for netplan. The handler only hands it back to the same backend, and
// compares two by their JSON (commitKey).
type Desired any

// Schema is the part of a backend that does no I/O: how one policy's desired state reads
// and how a node's policies merge. Decide plans with it.
type Schema interface {
	// Name is the backend's name as the NMState CR's spec.backend spells it.
	Name() string
	// Parse reads one policy's desired state (captures rendered). A policy written in
	// another backend's schema is refused naming both.
	Parse(raw []byte) (any, error)
	// Merge merges the parsed policies (sorted by name) into the node's desired state,
	// with the policies that state each interface. Policies that disagree are
	// state.Conflicts; any other error fails every policy.
	Merge(sources []Parsed) (desired Desired, owners map[string][]string, err error)
	// Drift says what of a committed desired state (an enactment's
	// status.desiredState) the node no longer runs.
	Drift(committed []byte, current state.State) ([]string, error)
}

// Parsed is one policy's desired state as its backend's Parse read it.
type Parsed struct {
	Policy string
	State  any
}

// Backend is how a node's network is configured: NetworkManager's engine (NetworkManager)
// or netplan (reconciler/netplan). The handler knows it only through this interface.
type Backend interface {
	Schema
	// Apply puts a node's whole desired state in effect, verified, in a transaction the
	// handler commits or rolls back; what the backend made for a policy the state no
	// longer names goes. Nothing is changed when it returns a *field.Error, a
	// *PoliciesRefused or a *networkmanager.CheckpointBusyError.
	Apply(ctx context.Context, desired Desired) (Transaction, error)
	// Check checks one policy's desired state (captures rendered) with the backend's own
	// tools, as Apply would, changing nothing: the handler checks while it reads, outside
	// Decide, and a policy refused here fails alone, like an invalid one. A backend whose
	// Parse says all returns nil.
	Check(ctx context.Context, policy string, desired []byte) error
	// Show is the node's network as it runs.
	Show(ctx context.Context) (state.State, error)
	// Changes signals each change of the node's network, until ctx ends.
	Changes(ctx context.Context) (<-chan struct{}, error)
}

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

// NMState is nmstate's schema (reconciler/state): the schema of the networkmanager
// backend, and of kubernetes-nmstate's policies.
type NMState struct{}

func (NMState) Name() string { return nmstatev1.BackendNetworkManager }

func (NMState) Parse(raw []byte) (any, error) { return state.Parse(raw) }

func (NMState) Merge(sources []Parsed) (Desired, map[string][]string, error) {
	in := make([]state.Source, len(sources))
	for i, s := range sources {
		st, ok := s.State.(state.State)
		if !ok {
			return nil, nil, fmt.Errorf("policy %q: not a parsed nmstate state", s.Policy)
		}
		in[i] = state.Source{Policy: s.Policy, State: st}
	}
	merged, err := state.Merge(in)
	if err != nil {
		return nil, nil, err
	}
	if _, err := state.Order(merged.State); err != nil {
		return nil, nil, err
	}
	return merged.State, merged.Owners, nil
}

func (NMState) Drift(committed []byte, current state.State) ([]string, error) {
	s, err := state.Parse(committed)
	if err != nil {
		return nil, err
	}
	if s, err = resolvedOn(s, current); err != nil {
		return nil, err // an interface identified by a MAC address the node shows on no one device
	}
	return state.Verify(s, current), nil
}

// NMStateOf is the state.State a backend of nmstate's schema was handed (nil is the empty
// state).
func NMStateOf(d Desired) (state.State, error) {
	switch s := d.(type) {
	case state.State:
		return s, nil
	case nil:
		return state.State{}, nil
	}
	return state.State{}, fmt.Errorf("a backend of nmstate's schema was handed %T", d)
}
