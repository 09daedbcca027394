// Package backend is the seam between the handler and the ways a node's network is
// configured (internal/networkmanager, internal/netplan): what a backend does, the
// desired state it is handed, the transaction it returns and the errors the handler
// acts on. It imports neither side: the handler and every backend import it.
//
// One meaning per word: a backend is one way of configuring a node's network behind
// this interface; the engine is nmoverlay's NetworkManager applier (internal/networkmanager.Client),
// which the networkmanager backend and the netplan backend both apply through.
package backend

import (
	"context"

	"github.com/nmoverlay/nmoverlay/internal/migration"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Desired is a node's whole desired state in its backend's schema, as the backend's Merge
// made it: state.State for the networkmanager backend (nmstate's schema), the policies'
// netplan documents for netplan. The handler only hands it back to the same backend, and
// compares two by their JSON.
type Desired any

// Schema is the part of a backend that does no I/O: how one policy's desired state reads
// and how a node's policies merge. The handler decides with it.
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

// Backend is how a node's network is configured. The handler knows a backend only
// through this interface.
type Backend interface {
	Schema
	// Apply puts a node's whole desired state in effect, verified, in a transaction the
	// handler commits or rolls back; what the backend made for a policy the state no
	// longer names goes. Nothing is changed when it returns a *field.Error, a
	// *PoliciesRefused or a *BusyError; an *ApplyError says the backend rolled back
	// what it changed.
	Apply(ctx context.Context, desired Desired) (Transaction, error)
	// Check checks one policy's desired state (captures rendered) with the backend's own
	// tools, as Apply would, changing nothing: the handler checks while it reads, and a
	// policy refused here fails alone, like an invalid one. A backend whose Parse says
	// all returns nil.
	Check(ctx context.Context, policy string, desired []byte) error
	// Show is the node's network as it runs.
	Show(ctx context.Context) (state.State, error)
	// Changes signals each change of the node's network, until ctx ends.
	Changes(ctx context.Context) (<-chan struct{}, error)
}

// Transaction is an applied, verified change the handler commits or rolls back.
type Transaction interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// PersistentPlanner is a backend that tells which of a node's persistent profiles the
// policies in force wrote: those kubernetes-nmstate's handler left in NetworkManager's
// persistent keyfile dir (dir), which a migration moves out (internal/migration).
// critical are the interfaces the node needs to reach its cluster, with why: what they
// need stays.
type PersistentPlanner interface {
	PersistentPlan(dir string, sources []Parsed, critical map[string]string) (migration.Plan, error)
}
