package ovsdb

import (
	"fmt"
	"sort"
	"strings"
)

// Keys of the Open_vSwitch row's external_ids that nmoverlay reads and writes.
const (
	// BridgeMappingsKey is OVN's: which OVS bridge each localnet network is on.
	BridgeMappingsKey = "ovn-bridge-mappings"
	// OwnedMappingsKey records the mappings nmoverlay added (same encoding): only those are
	// ever changed or removed by it, and `nm-overlay setup` removes them at boot, since
	// OVSDB is persistent and what a policy made must not outlive the boot.
	OwnedMappingsKey = "nmoverlay-bridge-mappings"
)

// Mappings maps localnet network names to bridge names.
type Mappings map[string]string

// ParseMappings reads OVN's encoding: localnet:bridge pairs joined by commas.
func ParseMappings(s string) (Mappings, error) {
	m := Mappings{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, pair := range strings.Split(s, ",") {
		localnet, bridge, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok || localnet == "" || bridge == "" {
			return nil, fmt.Errorf("%q: want localnet:bridge", pair)
		}
		if prev, dup := m[localnet]; dup && prev != bridge {
			return nil, fmt.Errorf("localnet %q is mapped to %q and %q", localnet, prev, bridge)
		}
		m[localnet] = bridge
	}
	return m, nil
}

// String is OVN's encoding, sorted by localnet name so that equal mappings encode equally.
func (m Mappings) String() string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	pairs := make([]string, len(names))
	for i, n := range names {
		pairs[i] = n + ":" + m[n]
	}
	return strings.Join(pairs, ",")
}

// HostMappings is what a host has: every mapping, and those of them nmoverlay added.
type HostMappings struct {
	All, Owned Mappings
}

// ForeignError: a policy would change or remove a mapping nmoverlay did not make.
type ForeignError struct{ Localnet, Bridge, Want string }

func (e *ForeignError) Error() string {
	if e.Want == "" {
		return fmt.Sprintf("ovn.bridge-mappings: localnet %q (bridge %q) was not mapped by nmoverlay, which removes only the mappings it made", e.Localnet, e.Bridge)
	}
	return fmt.Sprintf("ovn.bridge-mappings: localnet %q is mapped to bridge %q outside nmoverlay, which does not change mappings it did not make (wanted %q)", e.Localnet, e.Bridge, e.Want)
}

// Reconcile decides the host's mappings once nmoverlay's are want (every mapping the
// node's policies have present) and those named in absent are gone: mappings nmoverlay
// made and no longer wants are removed, mappings others made are kept as they are, and
// a policy that would change or remove one of those is refused. A wanted mapping that
// someone else already made stays theirs.
func Reconcile(cur HostMappings, want Mappings, absent []string) (HostMappings, error) {
	next := HostMappings{All: Mappings{}, Owned: Mappings{}}
	for localnet, bridge := range cur.All {
		// Ours only while it still says what we wrote: one changed since is someone else's.
		if owned, ours := cur.Owned[localnet]; !ours || owned != bridge {
			next.All[localnet] = bridge
		}
	}
	for _, localnet := range absent {
		if bridge, foreign := next.All[localnet]; foreign {
			return cur, &ForeignError{Localnet: localnet, Bridge: bridge}
		}
	}
	for localnet, bridge := range want {
		if theirs, foreign := next.All[localnet]; foreign {
			if theirs != bridge {
				return cur, &ForeignError{Localnet: localnet, Bridge: theirs, Want: bridge}
			}
			continue
		}
		next.All[localnet], next.Owned[localnet] = bridge, bridge
	}
	return next, nil
}
