package migration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/catalog"
)

func sampleArchive() *Archive {
	cache := []catalog.File{{Name: "csv.yaml", Data: []byte("kind: ClusterServiceVersion\nmetadata: {name: cache.v1}\n")}}
	old := []catalog.File{{Name: "csv.yaml", Data: []byte("kind: ClusterServiceVersion\nmetadata: {name: cache.v0}\n")}}
	backup := []catalog.File{{Name: "csv.yaml", Data: []byte("kind: ClusterServiceVersion\nmetadata: {name: backup.v1}\n")}}
	dc, do, db := catalog.DigestFiles(cache), catalog.DigestFiles(old), catalog.DigestFiles(backup)
	return &Archive{
		ExportedAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		Installations: []Installation{
			{Namespace: "ns", Name: "backup", Package: "backup", CSV: "backup.v1", Version: "1.0.0", BundleDigest: db, DependsOn: []string{"cache"},
				Spec: omv1.SubscriptionSpec{StartingCSV: "backup.1.0.0"}},
			{Namespace: "ns", Name: "cache", Package: "cache", CSV: "cache.v1", Version: "1.0.0", BundleDigest: dc,
				Revisions: []Revision{{Revision: 1, CSV: "cache.v0", BundleDigest: do}, {Revision: 2, CSV: "cache.v1", BundleDigest: dc}}},
		},
		Bundles: map[string][]catalog.File{dc: cache, do: old, db: backup},
	}
}

func TestRoundTripAndOrder(t *testing.T) {
	data, err := Marshal(sampleArchive())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Read(bytes.NewReader(data), "x.tgz")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Installations) != 2 || len(a.Bundles) != 3 || a.Installations[0].Spec.StartingCSV != "backup.1.0.0" {
		t.Fatalf("read back %+v", a)
	}
	order, err := a.Ordered()
	if err != nil || order[0].Name != "cache" || order[1].Name != "backup" {
		t.Errorf("order = %v, %v; want cache before backup, which depends on it", order, err)
	}
}

// tamper rewrites one entry of a valid archive.
func tamper(t *testing.T, edit func(name string, data []byte) (string, []byte)) []byte {
	t.Helper()
	data, err := Marshal(sampleArchive())
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := gzip.NewReader(bytes.NewReader(data))
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(tr)
		name, body := edit(h.Name, buf.Bytes())
		if name == "" {
			continue
		}
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(body)
	}
	_ = tw.Close()
	_ = zw.Close()
	return out.Bytes()
}

func TestReadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		says string
	}{
		{"not gzip", []byte("hello"), "not a gzip-compressed export archive"},
		{"altered bundle", tamper(t, func(n string, d []byte) (string, []byte) {
			if strings.HasPrefix(n, "bundles/") {
				d = bytes.Replace(d, []byte(`"name":"csv.yaml"`), []byte(`"name":"other.yaml"`), 1)
			}
			return n, d
		}), "the archive is damaged or was altered"},
		{"missing bundle", tamper(t, func(n string, d []byte) (string, []byte) {
			if n == bundleEntry(sampleArchive().Installations[0].BundleDigest) {
				return "", nil
			}
			return n, d
		}), "installations[0] (ns/backup): the bundle"},
		{"no index", tamper(t, func(n string, d []byte) (string, []byte) {
			if n == "export.json" {
				return "", nil
			}
			return n, d
		}), "no export.json"},
		{"other apiVersion", tamper(t, func(n string, d []byte) (string, []byte) {
			if n == "export.json" {
				d = bytes.Replace(d, []byte(APIVersion), []byte("operator-manager.domain/export/v9"), 1)
			}
			return n, d
		}), `apiVersion "operator-manager.domain/export/v9"`},
		{"stray entry", tamper(t, func(n string, d []byte) (string, []byte) {
			if n == "export.json" {
				return "../etc/passwd", d
			}
			return n, d
		}), `unexpected entry "../etc/passwd"`},
		{"unknown dependency", tamper(t, func(n string, d []byte) (string, []byte) {
			if n == "export.json" {
				d = bytes.Replace(d, []byte(`"cache"
      ]`), []byte(`"nosuch"
      ]`), 1)
			}
			return n, d
		}), `dependsOn "nosuch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data), "x.tgz")
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.HasPrefix(err.Error(), "x.tgz: ") {
				t.Errorf("Read = %v, want an error naming the file and saying %q", err, tc.says)
			}
		})
	}
}

// TestOrderedAcrossNamespaces: an installation whose dependency another namespace's
// installation meets (ServedFrom, one watching this namespace too) comes after it when the
// archive holds both (export -A), whatever their names.
func TestOrderedAcrossNamespaces(t *testing.T) {
	a := sampleArchive()
	a.Installations[0].DependsOn = nil
	a.Installations[0].Dependencies = []omv1.ResolvedDependency{{Package: "cache", ServedFrom: "shared/cache"}}
	a.Installations[1].Namespace = "shared"
	order, err := a.Ordered()
	if err != nil || order[0].Key() != "shared/cache" || order[1].Key() != "ns/backup" {
		t.Errorf("order = %v, %v; want shared/cache before ns/backup, which it serves", order, err)
	}
}

func TestOrderedRefusesCycle(t *testing.T) {
	a := sampleArchive()
	a.Installations[1].DependsOn = []string{"backup"}
	if _, err := a.Ordered(); err == nil || !strings.Contains(err.Error(), "cycle: ns/backup -> ns/cache -> ns/backup") {
		t.Errorf("Ordered = %v", err)
	}
}

// FuzzRead: an archive comes from outside (another cluster, a file on a laptop): Read
// never panics, and whatever it accepts writes back and reads again the same.
func FuzzRead(f *testing.F) {
	valid, err := Marshal(sampleArchive())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte{})
	f.Add(valid[:len(valid)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		again, err := Marshal(a)
		if err != nil {
			t.Fatalf("an accepted archive does not write back: %v", err)
		}
		b, err := Read(bytes.NewReader(again), "again")
		if err != nil || len(b.Installations) != len(a.Installations) || len(b.Bundles) != len(a.Bundles) {
			t.Fatalf("an accepted archive reads back differently: %v", err)
		}
	})
}
