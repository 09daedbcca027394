package scenarios

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/nmpolicy"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// captureScenarios: kubernetes-nmstate's docs/examples/lldp.yaml as published: LLDP on
// every Ethernet interface that is up, the interfaces coming whole from captures of the
// node's state, rewritten (lldp.enabled := true) and applied back: the state Show reports
// must be a desired state the engine takes as it is.
var captureScenarios = []Scenario{
	{"kubernetes-nmstate lldp.yaml, LLDP on every Ethernet that is up, by capture", func(ctx context.Context, e *Env) error {
		captures := map[string]string{
			"ethernets":      `interfaces.type=="ethernet"`,
			"ethernets-up":   `capture.ethernets | interfaces.state=="up"`,
			"ethernets-lldp": `capture.ethernets-up | interfaces.lldp.enabled:=true`,
		}
		current, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		tree, err := nmpolicy.ToTree(current)
		if err != nil {
			return err
		}
		results, errs := nmpolicy.Evaluate(captures, tree, nil)
		if errs != nil {
			return errs
		}
		doc, errs := nmpolicy.RenderDocument([]byte(`{"interfaces": "{{ capture.ethernets-lldp.interfaces }}"}`), results)
		if errs != nil {
			return errs
		}
		desired, err := state.Parse(doc)
		if err != nil {
			return fmt.Errorf("the captured interfaces as a desired state: %w\n%s", err, doc)
		}
		if len(desired.Interfaces) == 0 {
			return fmt.Errorf("no Ethernet interface is up:\n%s", doc)
		}
		tx, err := e.NM.Apply(ctx, desired, networkmanager.ApplyOptions{ActivationTimeout: 60 * time.Second})
		if err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		after, err := e.NM.Show(ctx)
		if err != nil {
			return err
		}
		for _, want := range desired.Interfaces {
			i := slices.IndexFunc(after.Interfaces, func(it state.Interface) bool { return it.Name == want.Name })
			if i < 0 || after.Interfaces[i].LLDP == nil || after.Interfaces[i].LLDP.Enabled == nil || !*after.Interfaces[i].LLDP.Enabled {
				return fmt.Errorf("%s: LLDP not enabled after the apply", want.Name)
			}
		}
		return nil
	}},
}
