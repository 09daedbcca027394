package backend

import (
	"fmt"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// NMState is nmstate's schema (internal/state): the schema of the networkmanager
// backend, and of kubernetes-nmstate's policies.
type NMState struct{}

func (NMState) Name() string { return nmstatev1.BackendNetworkManager }

func (NMState) Parse(raw []byte) (any, error) { return state.Parse(raw) }

func (NMState) Merge(sources []Parsed) (Desired, map[string][]string, error) {
	in, err := NMStateSources(sources)
	if err != nil {
		return nil, nil, err
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

// resolvedOn names the interfaces a committed state identifies by MAC or PCI address after
// the devices that have it in current (the node's current MAC addresses: a bond's ports
// show the bond's, so such a state is not checked for drift).
func resolvedOn(committed, current state.State) (state.State, error) {
	var devs []state.DeviceIdentity
	for _, it := range current.Interfaces {
		if (it.Type == state.Ethernet || it.Type == state.Veth || it.Type == state.InfiniBand) && it.MACAddress != nil {
			d := state.DeviceIdentity{Name: it.Name, MAC: *it.MACAddress}
			if it.PCIAddress != nil {
				d.PCIAddress = *it.PCIAddress
			}
			devs = append(devs, d)
		}
	}
	out, errs := state.ResolveIdentifiers(committed, devs)
	if errs != nil {
		return committed, errs
	}
	return out, nil
}

// NMStateSources are sources as nmstate states, each parsed by NMState.Parse.
func NMStateSources(sources []Parsed) ([]state.Source, error) {
	in := make([]state.Source, len(sources))
	for i, s := range sources {
		st, ok := s.State.(state.State)
		if !ok {
			return nil, fmt.Errorf("policy %q: not a parsed nmstate state", s.Policy)
		}
		in[i] = state.Source{Policy: s.Policy, State: st}
	}
	return in, nil
}
