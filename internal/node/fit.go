package node

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// MaxStateBytes bounds a NodeNetworkState's currentState: etcd refuses a request over
// 1.5 MiB, and the object carries its overlay status, drift and metadata besides.
// kubernetes-nmstate's grows without bound with the node's interfaces.
const MaxStateBytes = 1 << 20

// fitState marshals s in at most max bytes. What does not fit is left out, least useful
// first, and summary says what: first the running routes other than default routes
// (the kernel's per-interface routes), then whole interfaces (down ones first, then
// those without addresses, each group from the end of the name order), each named, so that
// an administrator knows which ones the NodeNetworkState does not show. summary is ""
// when everything fits.
func fitState(s state.State, max int) (raw []byte, summary string, err error) {
	if raw, err = json.Marshal(s); err != nil || len(raw) <= max {
		return raw, "", err
	}
	full := len(raw)
	var left []string
	if s.Routes != nil && len(s.Routes.Running) > 0 {
		routes := *s.Routes
		var kept []state.Route
		for _, r := range routes.Running {
			if r.IsDefault() {
				kept = append(kept, r)
			}
		}
		left = append(left, fmt.Sprintf("%d running routes (all but default routes)", len(routes.Running)-len(kept)))
		routes.Running = kept
		s.Routes = &routes
		if raw, err = json.Marshal(s); err != nil {
			return nil, "", err
		}
	}
	if len(raw) > max {
		// Most useful first: up with addresses, up, down; by name within each.
		ifaces := append([]state.Interface(nil), s.Interfaces...)
		sort.SliceStable(ifaces, func(i, j int) bool {
			if ri, rj := usefulness(ifaces[i]), usefulness(ifaces[j]); ri != rj {
				return ri < rj
			}
			return ifaces[i].Name < ifaces[j].Name
		})
		// The most interfaces that fit (the size grows with their number).
		lo, hi := 0, len(ifaces)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			s.Interfaces = ifaces[:mid]
			b, err := json.Marshal(s)
			if err != nil {
				return nil, "", err
			}
			if len(b) <= max {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		s.Interfaces = ifaces[:lo]
		sort.Slice(s.Interfaces, func(i, j int) bool { return s.Interfaces[i].Name < s.Interfaces[j].Name })
		left = append(left, fmt.Sprintf("%d of %d interfaces (down ones first, then those without addresses): %s",
			len(ifaces)-lo, len(ifaces), nameList(ifaces[lo:], maxLeftOutNames)))
		if raw, err = json.Marshal(s); err != nil {
			return nil, "", err
		}
	}
	summary = fmt.Sprintf("the node's state is %d bytes, over the %d allowed here; left out: %s", full, max, strings.Join(left, "; "))
	return raw, summary, nil
}

// maxLeftOutNames bounds the names a summary lists: within what the NodeNetworkState has
// left besides currentState (etcd's 1.5 MiB less MaxStateBytes), with room to spare.
const maxLeftOutNames = 64 << 10

// nameList lists the interfaces' names in name order, in at most max bytes: "and N more" ends
// a list cut short.
func nameList(ifaces []state.Interface, max int) string {
	sorted := make([]string, 0, len(ifaces))
	for _, it := range ifaces {
		sorted = append(sorted, it.Name)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for i, name := range sorted {
		if b.Len()+len(name)+2 > max {
			fmt.Fprintf(&b, " and %d more", len(sorted)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
	}
	return b.String()
}

// usefulness ranks an interface for a summarized state, most useful (0) first: up with
// addresses, up, down.
func usefulness(it state.Interface) int {
	switch {
	case it.State != state.Up:
		return 2
	case it.HasAddress():
		return 0
	}
	return 1
}
