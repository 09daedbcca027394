package machineconfigs

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_2/types"
	"github.com/coreos/vcontext/report"
	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"

	v3_2 "github.com/coreos/ignition/v2/config/v3_2"
	v3_4 "github.com/coreos/ignition/v2/config/v3_4"
	v3_5 "github.com/coreos/ignition/v2/config/v3_5"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// MachineConfig is the part of machineconfiguration.openshift.io/v1 MachineConfig this
// project writes. A local type: github.com/openshift/api is heavy and untagged.
type MachineConfig struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	Spec       MachineConfigSpec `json:"spec"`
}

// ObjectMeta is the part of metav1.ObjectMeta a MachineConfig of this project sets.
type ObjectMeta struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// MachineConfigSpec carries the Ignition config; this project sets nothing else.
type MachineConfigSpec struct {
	// Config is the Ignition config, as JSON.
	Config json.RawMessage `json:"config"`
}

// parsers validate a config of exactly their version with Ignition's own validator.
var parsers = map[string]func([]byte) (report.Report, error){
	"3.2.0": func(b []byte) (report.Report, error) { _, r, err := v3_2.Parse(b); return r, err },
	"3.4.0": func(b []byte) (report.Report, error) { _, r, err := v3_4.Parse(b); return r, err },
	"3.5.0": func(b []byte) (report.Report, error) { _, r, err := v3_5.Parse(b); return r, err },
}

// Ignition renders the Ignition config for options, as compact JSON, validated by
// Ignition's own parser for the requested version (validate.ValidateWithContext): a report
// with any entry is an error. The content is built once with the 3.2 types, the widest MCO
// support, and validated as 3.2.0; for a newer version only ignition.version is rewritten
// (every field used exists unchanged in 3.4 and 3.5) and the result validated again.
func Ignition(o Options) ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.WithDefaults()
	return ignition(Files(o), Units(o), o.IgnitionVersion)
}

// ignition is the Ignition config that writes files and units, validated for version.
func ignition(files []File, units []Unit, version string) ([]byte, error) {
	cfg := types.Config{Ignition: types.Ignition{Version: DefaultIgnitionVersion}}
	for _, f := range files {
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{
			Node: types.Node{
				Path:      f.Path,
				Overwrite: ptr(true),
				User:      types.NodeUser{Name: ptr("root")},
				Group:     types.NodeGroup{Name: ptr("root")},
			},
			FileEmbedded1: types.FileEmbedded1{
				Contents: types.Resource{Source: ptr(dataURL(f.Contents))},
				Mode:     ptr(int(f.Mode)),
			},
		})
	}
	for _, u := range units {
		unit := types.Unit{Name: u.Name}
		if u.Contents != "" {
			unit.Contents = ptr(u.Contents)
		}
		for _, d := range u.Dropins {
			unit.Dropins = append(unit.Dropins, types.Dropin{Name: d.Name, Contents: ptr(d.Contents)})
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, unit)
	}
	tree, err := jsonTree(cfg)
	if err != nil {
		return nil, err
	}
	versions := []string{DefaultIgnitionVersion}
	if version != DefaultIgnitionVersion {
		versions = append(versions, version)
	}
	var b []byte
	for _, v := range versions {
		tree["ignition"].(map[string]any)["version"] = v
		if b, err = json.Marshal(tree); err != nil {
			return nil, err
		}
		if err := validateIgnition(v, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// validateIgnition parses config with Ignition's package for version; any report entry
// (error, warning or info) is an error, so what MCO applies is exactly what was rendered.
func validateIgnition(version string, config []byte) error {
	parse, ok := parsers[version]
	if !ok {
		return &field.Error{Path: "ignitionVersion", Reason: fmt.Sprintf("%q has no parser", version)}
	}
	rpt, err := parse(config)
	if err != nil || rpt.IsFatal() || len(rpt.Entries) > 0 {
		return fmt.Errorf("ignition %s rejects the rendered config: %v: %s", version, err, strings.TrimSpace(rpt.String()))
	}
	return nil
}

// Render returns one validated MachineConfig per pool, or an error and none.
func Render(o Options) ([]MachineConfig, error) {
	cfg, err := Ignition(o)
	if err != nil {
		return nil, err
	}
	var mcs []MachineConfig
	for _, pool := range o.Pools {
		mcs = append(mcs, MachineConfig{
			APIVersion: APIVersion,
			Kind:       Kind,
			Metadata: ObjectMeta{
				Name:   Name(pool),
				Labels: map[string]string{RoleLabel: pool, ManagedByLabel: ManagedBy},
			},
			Spec: MachineConfigSpec{Config: cfg},
		})
	}
	return mcs, nil
}

// PersistentNameFormat is the name of a pool's MachineConfig of persistent profiles
// (RenderPersistent): its own, beside the overlay's, so that either changes alone.
const PersistentNameFormat = "99-%s-nmoverlay-persistent"

// RenderPersistent returns, for each of o's pools, a MachineConfig that writes files (the
// persistent profiles of policies a node needs before the cluster is up) and nothing else;
// o's IgnitionVersion applies, and its pools are checked as Render checks them.
func RenderPersistent(o Options, files []File) ([]MachineConfig, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.WithDefaults()
	cfg, err := ignition(files, nil, o.IgnitionVersion)
	if err != nil {
		return nil, err
	}
	var mcs []MachineConfig
	for _, pool := range o.Pools {
		mcs = append(mcs, MachineConfig{APIVersion: APIVersion, Kind: Kind,
			Metadata: ObjectMeta{Name: fmt.Sprintf(PersistentNameFormat, pool), Labels: map[string]string{RoleLabel: pool, ManagedByLabel: ManagedBy}},
			Spec:     MachineConfigSpec{Config: cfg}})
	}
	return mcs, nil
}

// Marshal writes MachineConfigs as multi-document YAML for `oc apply -f -`.
func Marshal(mcs []MachineConfig) ([]byte, error) {
	var out []byte
	for _, mc := range mcs {
		b, err := yaml.Marshal(mc)
		if err != nil {
			return nil, err
		}
		out = append(out, "---\n"...)
		out = append(out, b...)
	}
	return out, nil
}

// dataURL encodes contents with the package Ignition and MCO decode data URLs with:
// RFC 2396 percent-encoding, so a space is %20 and never '+' (url.QueryEscape would turn
// every space into a literal '+' on the host).
func dataURL(contents string) string {
	return "data:," + dataurl.EscapeString(contents)
}

// jsonTree is v as a JSON object, without the empty objects Ignition's generated types
// always emit ("proxy": {}, "verification": {}), so the MachineConfig shows only what it sets.
// json.Marshal sorts the keys of the tree, so the rendering is byte-for-byte stable.
func jsonTree(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	prune(tree)
	return tree, nil
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			child = prune(child)
			if m, ok := child.(map[string]any); ok && len(m) == 0 {
				delete(t, k)
				continue
			}
			t[k] = child
		}
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
	}
	return v
}

func ptr[T any](v T) *T { return &v }
