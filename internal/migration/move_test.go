package migration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keyfiles as nmstate leaves them in /etc/NetworkManager/system-connections, and the
// installer's; 0600 as NetworkManager writes them.
var keyfiles = map[string]string{
	"bond0.nmconnection": "[connection]\nid=bond0\nuuid=6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0001\ntype=bond\ninterface-name=bond0\n" +
		"autoconnect-slaves=1\n\n[bond]\nmode=active-backup\n\n[ipv4]\naddress1=192.0.2.10/24\nmethod=manual\n",
	"eth1.nmconnection": "[connection]\nid=eth1\nuuid=6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0002\ntype=ethernet\ninterface-name=eth1\n" +
		"master=bond0\nslave-type=bond\n",
	"eth2.nmconnection": "[connection]\nid=eth2\nuuid=6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0003\ntype=ethernet\ninterface-name=eth2\n" +
		"controller=6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0001\nport-type=bond\n",
	"Wired connection 1.nmconnection": "[connection]\nid=Wired connection 1\nuuid=6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0009\n" +
		"type=ethernet\ninterface-name=eth0\n\n[ipv4]\nmethod=auto\n",
	".hidden.nmconnection":      "[connection]\nid=hidden\n",
	"bond0.nmconnection.rpmnew": "[connection]\nid=bond0\n",
	"README":                    "not a profile\n",
	"notes.nmconnection~":       "[connection]\nid=editor\n",
	"broken.nmconnection":       "this is = not [a keyfile\n",
	"eth3-as-written.nmconnection": "[connection]\nid=eth3\nuuid=6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0004\ntype=ethernet\n" +
		"interface-name=eth3\n",
}

func writeLower(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "system-connections")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range keyfiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot is every file of dir: name -> mode and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := e.Info()
		out[e.Name()] = info.Mode().String() + "\n" + string(b)
	}
	return out
}

func TestReadProfiles(t *testing.T) {
	lower := writeLower(t)
	ps, err := ReadProfiles(lower)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range ps {
		files = append(files, p.File)
	}
	// Hidden files, editors' and packages' leftovers and what is no keyfile are no profiles.
	if got := strings.Join(files, ","); got != "Wired connection 1.nmconnection,bond0.nmconnection,eth1.nmconnection,eth2.nmconnection,eth3-as-written.nmconnection" {
		t.Fatalf("profiles %s", got)
	}
	if p := ps[2]; p.Controller != "bond0" || p.PortType != "bond" || p.Type != "ethernet" || p.Interface != "eth1" {
		t.Errorf("master and slave-type: %+v", p)
	}
	if p := ps[3]; p.Controller != "6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0001" || p.PortType != "bond" {
		t.Errorf("controller and port-type: %+v", p)
	}
	if p := ps[1]; p.SHA256 != digest([]byte(keyfiles["bond0.nmconnection"])) || p.UUID != "6f0ad3a2-1d4c-4c2a-9d51-0b1a8f0c0001" {
		t.Errorf("bond0: %+v", p)
	}
}

func notMounted(string) (bool, error) { return false, nil }

// planFor writes a plan moving the profiles of files, as read from lower.
func planFor(t *testing.T, lower, planPath string, files ...string) PlanFile {
	t.Helper()
	ps, err := ReadProfiles(lower)
	if err != nil {
		t.Fatal(err)
	}
	pf := PlanFile{Lower: lower, Made: time.Now().UTC().Truncate(time.Second), Plan: Plan{Move: []Entry{}, Stay: []Entry{}}}
	for _, p := range ps {
		e := Entry{Profile: p}
		for _, f := range files {
			if f == p.File {
				e.Policies = []string{"bond0"}
			}
		}
		if e.Policies != nil {
			pf.Move = append(pf.Move, e)
		} else {
			e.Why = "no policy in force names " + p.Interface
			pf.Stay = append(pf.Stay, e)
		}
	}
	if err := WritePlan(planPath, pf); err != nil {
		t.Fatal(err)
	}
	return pf
}

// TestMoveAndRestore: the plan's profiles leave the persistent dir for the backup, byte
// for byte and with their modes; nothing else there changes; the plan is consumed; and a
// restore puts back exactly what was there.
func TestMoveAndRestore(t *testing.T) {
	lower := writeLower(t)
	state := t.TempDir()
	planPath := filepath.Join(state, "migration", "plan.json")
	backup := filepath.Join(state, "migrated", "boot-1")
	before := snapshot(t, lower)
	planFor(t, lower, planPath, "bond0.nmconnection", "eth1.nmconnection", "eth2.nmconnection")

	r, err := Move(planPath, backup, notMounted)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Done(Moved) || len(r.Outcomes) != 3 {
		t.Fatalf("outcomes %v", r.Outcomes)
	}
	after := snapshot(t, lower)
	for name, was := range before {
		moved := name == "bond0.nmconnection" || name == "eth1.nmconnection" || name == "eth2.nmconnection"
		if now, ok := after[name]; moved && ok {
			t.Errorf("%s still in the persistent dir", name)
		} else if !moved && now != was {
			t.Errorf("%s changed: %q, was %q", name, now, was)
		}
	}
	kept := snapshot(t, filepath.Join(backup, backupProfiles))
	for _, name := range []string{"bond0.nmconnection", "eth1.nmconnection", "eth2.nmconnection"} {
		if kept[name] != before[name] {
			t.Errorf("backup of %s: %q, want %q", name, kept[name], before[name])
		}
	}
	if _, err := os.Stat(planPath); !os.IsNotExist(err) {
		t.Errorf("the plan is still there: %v", err)
	}
	// Run again (the unit's condition is the plan; without it nothing happens).
	if r, err := Move(planPath, backup, notMounted); r != nil || err != nil {
		t.Errorf("no plan: %+v, %v", r, err)
	}

	// Restore, refused while the overlay is mounted on the dir.
	mounted := func(dir string) (bool, error) { return dir == lower, nil }
	if _, err := Restore(backup, mounted); err == nil || !strings.Contains(err.Error(), "mounted on "+lower) {
		t.Fatalf("restore on a mounted lower: %v", err)
	}
	// A profile of one of the names was written since: it is left, and said so.
	if err := os.WriteFile(filepath.Join(lower, "eth2.nmconnection"), []byte("[connection]\nid=eth2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = Restore(backup, notMounted)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcomes["bond0.nmconnection"] != Restored || r.Outcomes["eth1.nmconnection"] != Restored || r.Outcomes["eth2.nmconnection"] != Occupied {
		t.Errorf("restore outcomes %v", r.Outcomes)
	}
	if err := os.Remove(filepath.Join(lower, "eth2.nmconnection")); err != nil {
		t.Fatal(err)
	}
	if r, err = Restore(backup, notMounted); err != nil || r.Outcomes["eth2.nmconnection"] != Restored || r.Outcomes["bond0.nmconnection"] != Present {
		t.Fatalf("second restore: %v, %v", r, err)
	}
	if got := snapshot(t, lower); len(got) != len(before) {
		t.Errorf("%d files after the restore, want %d", len(got), len(before))
	} else {
		for name, was := range before {
			if got[name] != was {
				t.Errorf("%s after the restore: %q, want %q", name, got[name], was)
			}
		}
	}
}

// TestMoveSafety: a profile changed since the plan stays; an interrupted move resumes;
// nothing moves while the overlay is mounted on the dir.
func TestMoveSafety(t *testing.T) {
	lower := writeLower(t)
	state := t.TempDir()
	planPath := filepath.Join(state, "plan.json")
	backup := filepath.Join(state, "migrated", "boot-1")
	planFor(t, lower, planPath, "bond0.nmconnection", "eth1.nmconnection", "eth2.nmconnection")
	before := snapshot(t, lower)

	mounted := func(dir string) (bool, error) { return dir == lower, nil }
	if _, err := Move(planPath, backup, mounted); err == nil || !strings.Contains(err.Error(), "the overlay is mounted on "+lower) {
		t.Fatalf("move with the overlay mounted: %v", err)
	}
	if got := snapshot(t, lower); len(got) != len(before) {
		t.Fatalf("the persistent dir changed while refusing")
	}

	// eth1 was edited after the plan; eth2 was moved by a run that stopped before the end.
	if err := os.WriteFile(filepath.Join(lower, "eth1.nmconnection"), []byte(keyfiles["eth1.nmconnection"]+"\n[ipv6]\nmethod=ignore\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(filepath.Join(lower, "eth2.nmconnection"), filepath.Join(backup, backupProfiles, "eth2.nmconnection")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(lower, "eth2.nmconnection")); err != nil {
		t.Fatal(err)
	}
	r, err := Move(planPath, backup, notMounted)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcomes["bond0.nmconnection"] != Moved || r.Outcomes["eth2.nmconnection"] != Moved || r.Outcomes["eth1.nmconnection"] != Changed {
		t.Errorf("outcomes %v", r.Outcomes)
	}
	if r.Done(Moved) {
		t.Error("Done with a profile left")
	}
	if b, err := os.ReadFile(filepath.Join(lower, "eth1.nmconnection")); err != nil || !bytes.Contains(b, []byte("method=ignore")) {
		t.Errorf("the edited eth1 was not left: %q, %v", b, err)
	}
	dirs, err := Backups(filepath.Join(state, "migrated"))
	if err != nil || len(dirs) != 1 || dirs[0] != backup {
		t.Errorf("backups %v, %v", dirs, err)
	}
}
