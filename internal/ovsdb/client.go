// Package ovsdb is a small client of Open vSwitch's database (OVSDB, RFC 7047, JSON-RPC on
// ovsdb-server's unix socket) for what nmoverlay writes there itself: OVN's bridge
// mappings in the Open_vSwitch row's external_ids. Bridges, ports and interfaces are
// NetworkManager's to write (its OVS profiles); nothing else of OVSDB is touched.
package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// DefaultSocket is where ovsdb-server listens on Debian, RHEL and RHCOS.
const DefaultSocket = "/run/openvswitch/db.sock"

const database = "Open_vSwitch"

// Client is one connection to ovsdb-server; its transactions run one at a time.
type Client struct {
	conn net.Conn
	enc  *json.Encoder
	dec  *json.Decoder
	mu   sync.Mutex
	id   int
}

// Dial connects to ovsdb-server's unix socket.
func Dial(ctx context.Context, socket string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("connecting to ovsdb-server: %w", err)
	}
	return &Client{conn: conn, enc: json.NewEncoder(conn), dec: json.NewDecoder(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

type message struct {
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// reply answers a request of the server's (echo): a response always carries its error.
type reply struct {
	Result json.RawMessage `json:"result"`
	Error  any             `json:"error"`
	ID     any             `json:"id"`
}

// opResult is one operation's outcome in a transact reply.
type opResult struct {
	Rows    []map[string]json.RawMessage `json:"rows,omitempty"`
	Count   *int                         `json:"count,omitempty"`
	Error   string                       `json:"error,omitempty"`
	Details string                       `json:"details,omitempty"`
}

// ErrChanged: a wait operation found the row changed since it was read (another writer).
var ErrChanged = errors.New("the row changed while it was being edited")

// transact runs ops in one OVSDB transaction: all or nothing.
func (c *Client) transact(ctx context.Context, ops ...map[string]any) ([]opResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(dl)
		defer c.conn.SetDeadline(time.Time{})
	}
	c.id++
	params := []any{database}
	for _, op := range ops {
		params = append(params, op)
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	if err := c.enc.Encode(message{Method: "transact", Params: p, ID: c.id}); err != nil {
		return nil, fmt.Errorf("ovsdb transact: %w", err)
	}
	for {
		var m message
		if err := c.dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("ovsdb transact: %w", err)
		}
		if m.Method == "echo" { // the server's keepalive: answered in kind
			if err := c.enc.Encode(reply{Result: m.Params, ID: m.ID}); err != nil {
				return nil, err
			}
			continue
		}
		if id, ok := m.ID.(float64); !ok || int(id) != c.id {
			continue // a notification or a stale reply
		}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			return nil, fmt.Errorf("ovsdb transact: %s", m.Error)
		}
		var results []opResult
		if err := json.Unmarshal(m.Result, &results); err != nil {
			return nil, fmt.Errorf("ovsdb transact reply: %w", err)
		}
		for i, r := range results {
			if r.Error == "timed out" && i < len(ops) && ops[i]["op"] == "wait" {
				return results, ErrChanged
			}
			if r.Error != "" {
				return results, fmt.Errorf("ovsdb transact: operation %d: %s: %s", i, r.Error, r.Details)
			}
		}
		if len(results) < len(ops) {
			return results, fmt.Errorf("ovsdb transact: %d results for %d operations", len(results), len(ops))
		}
		return results, nil
	}
}

// openVSwitchRow is what nmoverlay reads of the Open_vSwitch table's one row.
type openVSwitchRow struct {
	uuid        string
	externalIDs map[string]string
	raw         json.RawMessage // external_ids as read, for the wait that guards a write
}

func (c *Client) readRow(ctx context.Context) (openVSwitchRow, error) {
	res, err := c.transact(ctx, map[string]any{"op": "select", "table": database, "where": []any{},
		"columns": []string{"_uuid", "external_ids"}})
	if err != nil {
		return openVSwitchRow{}, err
	}
	if len(res[0].Rows) != 1 {
		return openVSwitchRow{}, fmt.Errorf("ovsdb: %d rows in table %s, want 1 (is Open vSwitch initialized?)", len(res[0].Rows), database)
	}
	row := res[0].Rows[0]
	var uuid [2]string
	if err := json.Unmarshal(row["_uuid"], &uuid); err != nil || uuid[0] != "uuid" {
		return openVSwitchRow{}, fmt.Errorf("ovsdb: _uuid %s: %v", row["_uuid"], err)
	}
	ids, err := decodeMap(row["external_ids"])
	if err != nil {
		return openVSwitchRow{}, fmt.Errorf("ovsdb: external_ids: %w", err)
	}
	return openVSwitchRow{uuid: uuid[1], externalIDs: ids, raw: row["external_ids"]}, nil
}

// decodeMap reads an OVSDB map of strings: ["map", [[key, value], ...]].
func decodeMap(raw json.RawMessage) (map[string]string, error) {
	var v [2]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var tag string
	if err := json.Unmarshal(v[0], &tag); err != nil || tag != "map" {
		return nil, fmt.Errorf("not a map: %s", raw)
	}
	var pairs [][2]string
	if err := json.Unmarshal(v[1], &pairs); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		m[p[0]] = p[1]
	}
	return m, nil
}

func hostMappings(r openVSwitchRow) (HostMappings, error) {
	all, err := ParseMappings(r.externalIDs[BridgeMappingsKey])
	if err != nil {
		return HostMappings{}, fmt.Errorf("external_ids:%s: %w", BridgeMappingsKey, err)
	}
	owned, err := ParseMappings(r.externalIDs[OwnedMappingsKey])
	if err != nil {
		return HostMappings{}, fmt.Errorf("external_ids:%s: %w", OwnedMappingsKey, err)
	}
	return HostMappings{All: all, Owned: owned}, nil
}

// HostMappings reads the host's bridge mappings.
func (c *Client) HostMappings(ctx context.Context) (HostMappings, error) {
	r, err := c.readRow(ctx)
	if err != nil {
		return HostMappings{}, err
	}
	return hostMappings(r)
}

// Apply brings the host's bridge mappings to want, with the localnets in absent gone (as
// Reconcile decides), and returns what the host had before: Apply(prev.Owned, nil) undoes
// it. Only the two keys change, in one transaction that fails if external_ids changed
// since it was read (then it reads and decides again).
func (c *Client) Apply(ctx context.Context, want Mappings, absent []string) (prev HostMappings, err error) {
	for try := 0; ; try++ {
		r, err := c.readRow(ctx)
		if err != nil {
			return HostMappings{}, err
		}
		cur, err := hostMappings(r)
		if err != nil {
			return HostMappings{}, err
		}
		next, err := Reconcile(cur, want, absent)
		if err != nil {
			return cur, err
		}
		if next.All.String() == cur.All.String() && next.Owned.String() == cur.Owned.String() {
			return cur, nil
		}
		where := []any{[]any{"_uuid", "==", []string{"uuid", r.uuid}}}
		insert := [][2]string{}
		for key, m := range map[string]Mappings{BridgeMappingsKey: next.All, OwnedMappingsKey: next.Owned} {
			if len(m) > 0 {
				insert = append(insert, [2]string{key, m.String()})
			}
		}
		_, err = c.transact(ctx,
			map[string]any{"op": "wait", "timeout": 0, "table": database, "where": where, "columns": []string{"external_ids"},
				"until": "==", "rows": []map[string]json.RawMessage{{"external_ids": r.raw}}},
			map[string]any{"op": "mutate", "table": database, "where": where, "mutations": []any{
				[]any{"external_ids", "delete", []any{"set", []string{BridgeMappingsKey, OwnedMappingsKey}}},
				[]any{"external_ids", "insert", []any{"map", insert}},
			}})
		if errors.Is(err, ErrChanged) && try < 5 {
			continue
		}
		return cur, err
	}
}
