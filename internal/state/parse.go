package state

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/field"
)

// Parse reads a desiredState (YAML or JSON) and validates it. The error, if any, is an
// field.Errors listing every problem with its field path; unknown and unsupported keys are
// errors, never dropped.
func Parse(doc []byte) (State, error) {
	s, _, err := parse(doc)
	return s, err
}

func parse(doc []byte) (State, []Need, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return State{}, nil, nil
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return State{}, nil, field.Errors{{Path: "desiredState", Reason: "not valid YAML: " + err.Error()}}
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return State{}, nil, field.Errors{{Path: "desiredState", Reason: "not valid YAML: " + err.Error()}}
	}
	d := &decoder{}
	var s State
	if tree != nil {
		d.structure(rootPath, tree, reflect.ValueOf(&s).Elem())
	}
	if len(d.errs) == 0 {
		d.errs = append(d.errs, Validate(s)...)
	}
	if len(d.errs) > 0 {
		return State{}, nil, d.errs
	}
	return s, append(append(typeNeeds(s), d.needs...), routeNeeds(s)...), nil
}

func typeList() string {
	s := make([]string, len(SupportedTypes))
	for i, t := range SupportedTypes {
		s[i] = string(t)
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}
