package topology

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// FromStatus is what the picture shows of a node, read from its NodeNetworkState and its
// enactments: the policies that state each interface or list it as a port (from the
// desired states they applied), the drift on each, the interfaces whose profile is in
// tmpfs.
func FromStatus(nns *v1beta1.NodeNetworkState, enactments []v1beta1.NodeNetworkConfigurationEnactment) (Node, error) {
	n := Node{Name: nns.Name, Policies: map[string][]string{}, Drift: map[string][]string{}, Ephemeral: map[string]bool{},
		Summarized: nns.Status.Summarized}
	if raw := nns.Status.CurrentState.Raw; len(raw) > 0 {
		if err := json.Unmarshal(raw, &n.Current); err != nil {
			return n, fmt.Errorf("node %s: its NodeNetworkState's currentState: %v", nns.Name, err)
		}
	}
	var about []string
	if v := nns.Status.HostNetworkManagerVersion; v != "" {
		about = append(about, "NetworkManager "+v)
	}
	if t := nns.Status.LastSuccessfulUpdateTime; !t.IsZero() {
		about = append(about, "read "+t.UTC().Format(time.RFC3339))
	}
	for _, e := range enactments {
		var desired state.State
		if json.Unmarshal(e.Status.DesiredState.Raw, &desired) != nil {
			continue
		}
		policy := e.Labels[shared.PolicyLabel]
		states := func(name string) {
			if !slices.Contains(n.Policies[name], policy) {
				n.Policies[name] = append(n.Policies[name], policy)
			}
		}
		for _, it := range desired.Interfaces {
			if it.State == state.Absent {
				continue
			}
			states(it.Name)
			// A port it lists is its too: the policy writes the port's profile.
			for _, r := range it.References() {
				if r.Kind == state.RefPort {
					states(r.Name)
				}
			}
		}
	}
	if o := nns.Status.Overlay; o != nil {
		for _, p := range o.Ephemeral {
			if p.Interface != "" && p.Change != "deleted" {
				n.Ephemeral[p.Interface] = true
			}
		}
		if o.Degraded != "" {
			about = append(about, "overlay degraded: "+o.Degraded)
		}
	}
	var names []string
	for _, it := range n.Current.Interfaces {
		names = append(names, it.Name)
	}
	// Drift is "<policy>: changed outside nmoverlay: <path>: <what>; ...", each part put
	// on the interface its path starts with.
	for _, d := range nns.Status.Drift {
		policy, what, _ := strings.Cut(d, ": ")
		what = strings.TrimPrefix(what, "changed outside nmoverlay: ")
		for _, diff := range strings.Split(what, "; ") {
			if iface := state.OwnerOf(diff, names); iface != "" {
				n.Drift[iface] = append(n.Drift[iface], policy+": "+diff)
			} else {
				about = append(about, "drift "+policy+": "+diff)
			}
		}
	}
	n.About = strings.Join(about, " · ")
	return n, nil
}
