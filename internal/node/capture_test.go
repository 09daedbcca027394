package node

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/nmpolicy"
)

func TestRenderCaptures(t *testing.T) {
	now := time.Date(2026, 11, 24, 6, 0, 0, 123, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second))
	current := `{"interfaces":[{"name":"eth0","type":"ethernet","mtu":1500},{"name":"br1","type":"linux-bridge"}],
		"routes":{"running":[{"destination":"0.0.0.0/0","next-hop-interface":"eth0"}]}}`
	// After the policy's own change: the default route is on br1.
	afterApply := strings.ReplaceAll(current, `"next-hop-interface":"eth0"`, `"next-hop-interface":"br1"`)
	captures := map[string]string{
		"gw":  `routes.running.destination=="0.0.0.0/0"`,
		"nic": `interfaces.name==capture.gw.routes.running.0.next-hop-interface`,
	}
	desired := `{"interfaces":[{"name":"br1","type":"linux-bridge","bridge":{"port":[{"name":"{{ capture.nic.interfaces.0.name }}"}]}}]}`
	kept := func(name, state string) v1beta1.CapturedState {
		return v1beta1.CapturedState{State: shared.State{Raw: []byte(state)}, MetaInfo: v1beta1.CaptureMetaInfo{Version: "0", TimeStamp: earlier}}
	}
	keptGW := kept("gw", `{"routes":{"running":[{"destination":"0.0.0.0/0","next-hop-interface":"eth0"}]}}`)
	keptNIC := kept("nic", `{"interfaces":[{"mtu":1500,"name":"eth0","type":"ethernet"}]}`)
	for _, tc := range []struct {
		name     string
		current  string
		kept     map[string]v1beta1.CapturedState
		desired  string
		want     string // the rendered desired state, or the error
		wantKept []string
	}{{
		name: "first apply: evaluated against the node", current: current, desired: desired,
		want: `{"interfaces":[{"bridge":{"port":[{"name":"eth0"}]},"name":"br1","type":"linux-bridge"}]}`,
	}, {
		name: "after a reboot: what the enactment kept, though the node changed", current: afterApply, desired: desired,
		kept: map[string]v1beta1.CapturedState{"gw": keptGW, "nic": keptNIC},
		want: `{"interfaces":[{"bridge":{"port":[{"name":"eth0"}]},"name":"br1","type":"linux-bridge"}]}`, wantKept: []string{"gw", "nic"},
	}, {
		name: "one kept (written by kubernetes-nmstate): the other reads it", current: afterApply, desired: desired,
		kept: map[string]v1beta1.CapturedState{"gw": keptGW},
		want: `{"interfaces":[{"bridge":{"port":[{"name":"eth0"}]},"name":"br1","type":"linux-bridge"}]}`, wantKept: []string{"gw"},
	}, {
		name: "a capture that finds nothing fails the policy", current: `{"interfaces":[]}`, desired: desired,
		want: `spec.capture.gw: no running route has destination == "0.0.0.0/0"`,
	}, {
		name: "a reference to a field the capture lacks", current: current,
		desired: `{"interfaces":[{"name":"{{ capture.nic.interfaces.0.mac-address }}","type":"ethernet"}]}`,
		want:    `spec.desiredState.interfaces[0].name: capture.nic.interfaces.0.mac-address: no "mac-address" in interfaces.0 (it has mtu, name, type)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{Name: "p", Capture: captures, DesiredState: []byte(tc.desired)}
			e := &v1beta1.NodeNetworkConfigurationEnactment{Status: v1beta1.NodeNetworkConfigurationEnactmentStatus{CapturedStates: tc.kept}}
			kept, cached := keptCaptures(e, captures)
			cur, err := nmpolicy.ToTree([]byte(tc.current))
			if err != nil {
				t.Fatal(err)
			}
			captured, rendered, err := render(p, cur, kept, cached, now)
			if err != nil {
				if !strings.HasPrefix(err.Error(), tc.want) {
					t.Fatalf("error %q, want %q", err, tc.want)
				}
				return
			}
			if string(rendered) != tc.want {
				t.Errorf("rendered %s, want %s", rendered, tc.want)
			}
			if len(captured) != len(captures) {
				t.Errorf("captured %d states, want %d", len(captured), len(captures))
			}
			for name, c := range captured {
				wasKept := false
				for _, k := range tc.wantKept {
					wasKept = wasKept || k == name
				}
				if wasKept && !c.MetaInfo.TimeStamp.Equal(&earlier) {
					t.Errorf("%s: kept capture re-dated %v", name, c.MetaInfo.TimeStamp)
				}
				if !wasKept && (c.MetaInfo.Version != CaptureVersion || !c.MetaInfo.TimeStamp.Time.Equal(now.Truncate(time.Second))) {
					t.Errorf("%s: evaluated capture has meta %+v", name, c.MetaInfo)
				}
			}
		})
	}
}
