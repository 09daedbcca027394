// Package nmpolicy is nmstate's policy language as a policy's spec.capture and
// desiredState use it: capture expressions evaluated against a node's current state, and
// "{{ capture.NAME.path }}" references in the desired state replaced with their results.
// It follows what nmstate's own evaluator (nmstatectl policy, which kubernetes-nmstate
// runs) accepts, so a policy written for it means the same here; where that evaluator
// refuses something harmless (a bare top-level key, a number where a string was
// expected), this one accepts it. States are JSON trees (map[string]any, []any,
// json.Number, string, bool, nil): the results are stored on the enactment as they are.
// No I/O.
package nmpolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Error is an expression that cannot be parsed or evaluated. It names the capture and
// where in its expression the problem is.
type Error struct {
	Capture string
	Expr    string
	// Pos is the 0-based character offset in Expr.
	Pos    int
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (at character %d of: %s)", e.Reason, e.Pos+1, e.Expr)
}

// Op is what an expression does with the state it reads.
type Op int

const (
	// Keep keeps the subtree its path names (a bare path), or all of a capture.
	Keep Op = iota
	// Equal keeps the list entries whose field equals the value (==).
	Equal
	// Replace sets the field to the value in every list entry (:=).
	Replace
)

// Expr is one parsed capture expression.
type Expr struct {
	Name string
	Line string
	Op   Op
	// Input is the capture the expression reads ("capture.X | ..." or a path beginning
	// capture.X); "" reads the node's current state.
	Input string
	// Path is the key path in the input, capture prefix removed; list entries are
	// matched or rewritten by the keys after the list's.
	Path    []string
	pathPos int
	// Value is the right-hand side of == and :=.
	Value Operand
}

// Operand is the value an expression compares with or sets.
type Operand struct {
	// Literal: a quoted string, or a bare word (a number or true/false keeps its type).
	Literal any
	Null    bool
	// IsPath: a path into Capture's result ("" for the current state).
	IsPath  bool
	Capture string
	Path    []string
	pos     int
}

// Deps are the captures the expression reads.
func (x Expr) Deps() []string {
	var deps []string
	if x.Input != "" {
		deps = append(deps, x.Input)
	}
	if x.Value.IsPath && x.Value.Capture != "" && x.Value.Capture != x.Input {
		deps = append(deps, x.Value.Capture)
	}
	return deps
}

type tokenKind int

const (
	tokWord tokenKind = iota
	tokQuoted
	tokEqual
	tokReplace
	tokPipe
)

type token struct {
	kind tokenKind
	text string
	pos  int
}

// stops end a bare word.
const stops = "=:|\"!"

func tokenize(name, line string) ([]token, error) {
	rs := []rune(line)
	fail := func(pos int, format string, a ...any) error {
		return &Error{Capture: name, Expr: line, Pos: pos, Reason: fmt.Sprintf(format, a...)}
	}
	var toks []token
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '=' || c == ':':
			if i+1 >= len(rs) || rs[i+1] != '=' {
				return nil, fail(i, "expected %q, not a lone %q", string(c)+"=", string(c))
			}
			kind := tokEqual
			if c == ':' {
				kind = tokReplace
			}
			toks = append(toks, token{kind: kind, text: string(c) + "=", pos: i})
			i += 2
		case c == '|':
			toks = append(toks, token{kind: tokPipe, text: "|", pos: i})
			i++
		case c == '"':
			end := i + 1
			for end < len(rs) && rs[end] != '"' {
				end++
			}
			if end >= len(rs) {
				return nil, fail(i, "no closing double quote")
			}
			toks = append(toks, token{kind: tokQuoted, text: string(rs[i+1 : end]), pos: i})
			i = end + 1
		case c == '!':
			return nil, fail(i, "unknown operator: an expression uses == or :=")
		default:
			start := i
			for i < len(rs) && !unicode.IsSpace(rs[i]) && !strings.ContainsRune(stops, rs[i]) {
				i++
			}
			toks = append(toks, token{kind: tokWord, text: string(rs[start:i]), pos: start})
		}
	}
	return toks, nil
}

// Parse parses one capture expression (the value of spec.capture.NAME).
func Parse(name, line string) (Expr, error) {
	// nmstate reads a non-breaking space as a space; YAML editors insert them.
	line = strings.TrimSpace(strings.ReplaceAll(line, "\u00a0", " "))
	x := Expr{Name: name, Line: line}
	fail := func(pos int, format string, a ...any) (Expr, error) {
		return Expr{}, &Error{Capture: name, Expr: line, Pos: pos, Reason: fmt.Sprintf(format, a...)}
	}
	toks, err := tokenize(name, line)
	if err != nil {
		return Expr{}, err
	}
	if len(toks) == 0 {
		return fail(0, "empty expression")
	}
	// capture.X | rest
	for i, t := range toks {
		if t.kind != tokPipe {
			continue
		}
		if i != 1 || toks[0].kind != tokWord {
			return fail(toks[0].pos, "what a pipe reads must be one capture: capture.NAME | ...")
		}
		p := splitPath(toks[0].text)
		if len(p) != 2 || p[0] != "capture" || p[1] == "" {
			return fail(toks[0].pos, "what a pipe reads must be one capture: capture.NAME | ..., not %q", toks[0].text)
		}
		x.Input = p[1]
		toks = toks[2:]
		if len(toks) == 0 {
			return fail(t.pos, "nothing after the pipe: give a path, a path == value or a path := value")
		}
		for _, u := range toks {
			if u.kind == tokPipe {
				return fail(u.pos, "one pipe at most in an expression")
			}
		}
		break
	}
	op := -1
	for i, t := range toks {
		if t.kind == tokEqual || t.kind == tokReplace {
			if op >= 0 {
				return fail(t.pos, "one == or := at most in an expression")
			}
			op = i
		}
	}
	if op < 0 {
		if len(toks) != 1 || toks[0].kind != tokWord {
			return fail(toks[0].pos, "expected a path, a path == value or a path := value")
		}
		if err := x.setKey(toks[0], fail); err != nil {
			return Expr{}, err
		}
		return x, nil
	}
	x.Op = Equal
	if toks[op].kind == tokReplace {
		x.Op = Replace
	}
	if op != 1 || toks[0].kind != tokWord {
		pos := toks[op].pos
		if op > 1 {
			pos = toks[1].pos
		}
		return fail(pos, "%s needs one property path before it", toks[op].text)
	}
	if err := x.setKey(toks[0], fail); err != nil {
		return Expr{}, err
	}
	if err := x.checkKey(fail); err != nil {
		return Expr{}, err
	}
	rest := toks[op+1:]
	switch {
	case len(rest) == 0:
		return fail(toks[op].pos, "no value after %s", toks[op].text)
	case len(rest) > 1:
		return fail(rest[1].pos, "one value after %s, a quoted string, a word, a path or null", toks[op].text)
	case rest[0].kind != tokWord && rest[0].kind != tokQuoted:
		return fail(rest[0].pos, "no value after %s", toks[op].text)
	}
	v, err := operand(rest[0])
	if err != nil {
		return fail(rest[0].pos, "%s", err)
	}
	x.Value = v
	return x, nil
}

// setKey reads the left-hand path: capture.X.path reads capture X.
func (x *Expr) setKey(t token, fail func(int, string, ...any) (Expr, error)) error {
	p := splitPath(t.text)
	if slices.Contains(p, "") {
		_, err := fail(t.pos, "empty key in path %q", t.text)
		return err
	}
	x.pathPos = t.pos
	if p[0] == "capture" {
		if len(p) < 2 {
			_, err := fail(t.pos, "capture needs a name: capture.NAME")
			return err
		}
		if x.Input != "" {
			_, err := fail(t.pos, "the path reads capture %q, but the pipe already gives capture %q", p[1], x.Input)
			return err
		}
		x.Input, p = p[1], p[2:]
		x.pathPos += len("capture.") + len([]rune(x.Input)) + 1
		if len(p) == 0 && x.Op != Keep {
			_, err := fail(t.pos, "no property path after the capture name")
			return err
		}
	}
	x.Path = p
	return nil
}

// checkKey checks the left-hand path of == and :=: lists of interfaces, routes or
// route rules, and a field of their entries.
func (x *Expr) checkKey(fail func(int, string, ...any) (Expr, error)) error {
	p := x.Path
	switch p[0] {
	case "interfaces":
		if len(p) < 2 {
			_, err := fail(x.pathPos, "no interface field after interfaces: interfaces.name == ...")
			return err
		}
	case "routes":
		if len(p) != 3 || (p[1] != "running" && p[1] != "config") {
			_, err := fail(x.pathPos, "a route path is routes.running.FIELD or routes.config.FIELD")
			return err
		}
	case "route-rules":
		if len(p) != 3 || p[1] != "config" {
			_, err := fail(x.pathPos, "a route rule path is route-rules.config.FIELD")
			return err
		}
	default:
		_, err := fail(x.pathPos, "%s matches or sets entries of interfaces, routes or route-rules, not %q", map[Op]string{Equal: "==", Replace: ":="}[x.Op], p[0])
		return err
	}
	return nil
}

// operand reads a right-hand side: a quoted string is a string; null is null; a dotted
// word beginning with a state's key or capture is a path; any other word a literal (an
// unquoted address such as 0.0.0.0/0 is not a path).
func operand(t token) (Operand, error) {
	if t.kind == tokQuoted {
		return Operand{Literal: t.text}, nil
	}
	if strings.EqualFold(t.text, "null") {
		return Operand{Null: true}, nil
	}
	p := splitPath(t.text)
	if len(p) > 1 && (p[0] == "capture" || p[0] == "interfaces" || p[0] == "routes" || p[0] == "route-rules") {
		if slices.Contains(p, "") {
			return Operand{}, fmt.Errorf("empty key in path %q", t.text)
		}
		o := Operand{IsPath: true, Path: p, pos: t.pos}
		if p[0] == "capture" {
			if len(p) < 3 {
				return Operand{}, fmt.Errorf("no property path after the capture name: capture.%s.PATH", p[1])
			}
			o.Capture, o.Path = p[1], p[2:]
		}
		return o, nil
	}
	return Operand{Literal: literal(t.text)}, nil
}

// literal types a bare word the way YAML would: numbers and booleans keep their type, so
// interfaces.mtu := 9000 sets a number.
func literal(word string) any {
	switch word {
	case "true":
		return true
	case "false":
		return false
	}
	if isNumber(word) {
		return json.Number(word)
	}
	return word
}

func splitPath(s string) []string { return strings.Split(s, ".") }
