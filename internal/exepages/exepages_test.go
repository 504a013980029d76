package exepages

import (
	"strings"
	"testing"
)

func TestReleasable(t *testing.T) {
	const exe = "/usr/local/bin/operator-manager"
	cases := []struct {
		name string
		m    Mapping
		want bool
	}{
		{"code", Mapping{Start: 0x400000, End: 0x2000000, Perms: "r-xp", Path: exe}, true},
		{"read-only data", Mapping{Start: 0x2000000, End: 0x4000000, Perms: "r--p", Path: exe}, true},
		{"replaced on disk", Mapping{Start: 0x400000, End: 0x2000000, Perms: "r-xp", Path: exe + " (deleted)"}, true},
		{"writable data would lose what was written", Mapping{Start: 0x4000000, End: 0x4100000, Perms: "rw-p", Path: exe}, false},
		{"read-only after relocation holds written pages", Mapping{Start: 0x4000000, End: 0x4100000, Perms: "r--p", Path: exe, AnonymousKiB: 12}, false},
		{"another file", Mapping{Start: 0x7f0000000000, End: 0x7f0000100000, Perms: "r-xp", Path: "/usr/lib/libc.so.6"}, false},
		{"a file named like the executable plus more", Mapping{Start: 0x1000, End: 0x2000, Perms: "r--p", Path: exe + ".bak"}, false},
		{"anonymous memory", Mapping{Start: 0xc000000000, End: 0xc004000000, Perms: "rw-p"}, false},
		{"no access (guard)", Mapping{Start: 0x1000, End: 0x2000, Perms: "---p", Path: exe}, false},
		{"empty range", Mapping{Start: 0x1000, End: 0x1000, Perms: "r--p", Path: exe}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Releasable(c.m, exe); got != c.want {
				t.Errorf("Releasable(%+v) = %v, want %v", c.m, got, c.want)
			}
		})
	}
	if Releasable(cases[0].m, "") {
		t.Error("an unknown executable path must release nothing")
	}
}

func TestParseSmaps(t *testing.T) {
	in := `00400000-022db000 r-xp 00000000 00:1b 3                                  /opt/my tools/operator-manager
Size:              31596 kB
Rss:               19884 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
04617000-046d8000 rw-p 04217000 00:1b 3                                  /opt/my tools/operator-manager (deleted)
Rss:                 644 kB
Anonymous:           120 kB
5ffc4400000-5ffc5000000 rw-p 00000000 00:00 0 
Rss:                7224 kB
Anonymous:          7224 kB
`
	got, err := ParseSmaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x400000, End: 0x22db000, Perms: "r-xp", Path: "/opt/my tools/operator-manager", RssKiB: 19884},
		{Start: 0x4617000, End: 0x46d8000, Perms: "rw-p", Path: "/opt/my tools/operator-manager (deleted)", RssKiB: 644, AnonymousKiB: 120},
		{Start: 0x5ffc4400000, End: 0x5ffc5000000, Perms: "rw-p", RssKiB: 7224, AnonymousKiB: 7224},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d mappings, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	for _, bad := range []string{
		"zz-22db000 r-xp 00000000 00:1b 3 /bin/x\n",
		"00400000 r-xp 00000000 00:1b 3 /bin/x\n",
		"00400000-022db000 r-xp\n",
	} {
		if _, err := ParseSmaps(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("ParseSmaps(%q) = %v, want an error naming line 1", bad, err)
		}
	}
}
