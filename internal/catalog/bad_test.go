package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// badCatalog copies testdata/bad and adds what is not committed: symlinks (one to a file
// outside the root, one to a package directory outside, one inside the root) and a file
// one byte over the default size limit (sparse, so it costs no disk).
func badCatalog(t *testing.T) string {
	t.Helper()
	dir := copyFixture(t, "testdata/bad")
	outside := filepath.Dir(dir)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "outside.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\n"), 0o644))
	must(os.Symlink("../../../outside.yaml", filepath.Join(dir, "symlink", "1.0.0", "things.crd.yaml")))
	must(os.CopyFS(filepath.Join(outside, "outside-pkg"), os.DirFS("testdata/bad/good")))
	must(os.Symlink("../outside-pkg", filepath.Join(dir, "linked")))
	must(os.Symlink("good", filepath.Join(dir, "good2")))
	must(os.Symlink("../../noannotations/1.0.0/manifests", filepath.Join(dir, "symlinkdir", "1.0.0", "manifests")))
	f, err := os.Create(filepath.Join(dir, "big", "1.0.0", "huge.yaml"))
	must(err)
	must(f.Truncate(DefaultMaxFileSize + 1))
	must(f.Close())
	return dir
}

func TestRejections(t *testing.T) {
	c := loadFixture(t, badCatalog(t))
	const escape = "path escape: a name must not contain '/', '\\' or be '..'"
	want := []Rejection{
		{"badversion/1.0.0", `csv.yaml: spec.version "1.0" is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD]): No Major.Minor.Patch elements found`},
		{"big/1.0.0", "huge.yaml: file is 8388609 bytes, over the size limit of 8388608 bytes (8 MiB)"},
		{"dupa/1.0.0", `duplicate CSV name "shared.v1.0.0": declared by dupa/1.0.0 and dupb/1.0.0`},
		{"dupb/1.0.0", `duplicate CSV name "shared.v1.0.0": declared by dupa/1.0.0 and dupb/1.0.0`},
		{"escape/escape.package.yaml", `packageName "../escape": ` + escape},
		{"fbcescape/catalog.yaml", `olm.bundle "fbcescape.v1.0.0" (line 9): properties[1] (olm.bundle.object): ref "../../outside.yaml": path escape: a referenced file must be inside the catalog root`},
		{"fbcescape/catalog.yaml", `olm.channel "stable" (line 3): entries[0] "fbcescape.v1.0.0": names no loaded olm.bundle of the package`},
		{"good2", `symlink to "good" (inside the catalog root) not followed: symlinks are never followed`},
		{"linked", `symlink to "../outside-pkg" (outside the catalog root) not followed: symlinks are never followed`},
		{"malformed/1.0.0", "malformed.clusterserviceversion.yaml: error converting YAML to JSON: yaml: line 8: found character that cannot start any token"},
		{"malformedcrd/1.0.0", "crds.yaml: yaml: line 25: did not find expected ',' or ']'"},
		{"missinghead/missinghead.package.yaml", `channels[1] "fast": currentCSV "missinghead.v9.9.9" names no bundle of the package`},
		{"noannotations/1.0.0", "metadata/annotations.yaml is missing: without a package file, a bundle names its package and channels there"},
		{"nocsv/1.0.0", "no ClusterServiceVersion among the 1 manifest files"},
		{"symlink/1.0.0", `things.crd.yaml: symlink to "../../../outside.yaml" (outside the catalog root) not followed: symlinks are never followed`},
		{"symlinkdir/1.0.0", `manifests: symlink to "../../noannotations/1.0.0/manifests" (inside the catalog root) not followed: symlinks are never followed`},
	}
	for i := range max(len(want), len(c.Rejections)) {
		var got, exp Rejection
		if i < len(c.Rejections) {
			got = c.Rejections[i]
		}
		if i < len(want) {
			exp = want[i]
		}
		if got != exp {
			t.Errorf("rejection %d:\n got %s\nwant %s", i, got, exp)
		}
	}

	t.Run("the rest loads", func(t *testing.T) {
		var loaded []string
		for _, b := range c.Bundles() {
			loaded = append(loaded, b.RelPath)
		}
		// big/1.0.0 is rejected, its CSV notwithstanding; malformed/1.1.0 loads beside
		// its broken sibling; missinghead keeps its good channel.
		if want := []string{"good/1.0.0", "malformed/1.1.0", "missinghead/1.0.0"}; !slices.Equal(loaded, want) {
			t.Errorf("loaded %v, want %v", loaded, want)
		}
		p := c.Package("missinghead")
		if p == nil || len(p.Channels) != 1 || p.DefaultChannel != "stable" {
			t.Errorf("missinghead: %+v", p)
		}
		for _, name := range []string{"badversion", "nocsv", "dupa", "escape", "../escape", "fbcescape", "linked"} {
			if c.Package(name) != nil {
				t.Errorf("package %q with no loadable bundle is listed", name)
			}
		}
	})
}

func TestSizeLimitOption(t *testing.T) {
	c, err := Load("testdata/layouts", Options{MaxFileSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat("testdata/layouts/manifestpkg/1.1.0/manifestpkg.v1.1.0.clusterserviceversion.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Rejection{"manifestpkg/1.1.0", fmt.Sprintf("manifestpkg.v1.1.0.clusterserviceversion.yaml: file is %d bytes, over the size limit of 1024 bytes (1 KiB)", fi.Size())}
	if !slices.Contains(c.Rejections, want) {
		t.Errorf("no %v among %v", want, c.Rejections)
	}
	// index.json is small enough; its packages load.
	if c.Package("jsonpkg") == nil {
		t.Error("jsonpkg not loaded")
	}
}

// TestNothingOutsideRoot checks that the loader cannot be led out of the root by a
// symlinked catalog file or an olm.bundle.object ref: the outside file is never part of
// any bundle, whatever path is tried.
func TestNothingOutsideRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "catalog")
	if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: outside\n"
	if err := os.WriteFile(filepath.Join(dir, "secret.yaml"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret.yaml", filepath.Join(root, "catalog.yaml")); err != nil {
		t.Fatal(err)
	}
	fbc := "schema: olm.package\nname: p\n---\nschema: olm.bundle\npackage: p\nname: p.v1.0.0\nproperties:\n" +
		"- {type: olm.package, value: {packageName: p, version: 1.0.0}}\n- {type: olm.bundle.object, value: {ref: REF}}\n"
	for _, ref := range []string{"../../secret.yaml", "/" + filepath.ToSlash(filepath.Join(dir, "secret.yaml")), "sub/../../../secret.yaml"} {
		t.Run(ref, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(root, "p", "catalog.yaml"), []byte(strings.Replace(fbc, "REF", ref, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			c := loadFixture(t, root)
			if len(c.Bundles()) != 0 {
				t.Fatalf("loaded %v", c.Bundles())
			}
			var reasons []string
			for _, r := range c.Rejections {
				reasons = append(reasons, r.String())
			}
			all := strings.Join(reasons, "\n")
			if !strings.Contains(all, "catalog.yaml: symlink to \"../secret.yaml\" (outside the catalog root) not followed") ||
				!strings.Contains(all, "path escape: a referenced file must be inside the catalog root") {
				t.Errorf("rejections:\n%s", all)
			}
		})
	}
}

// TestPackageNameMustLabel: a package whose name cannot be a label value (too long, or a
// character a label refuses) is rejected at load, naming it and why: installed, every
// object it made would have been refused by the API server.
func TestPackageNameMustLabel(t *testing.T) {
	long := strings.Repeat("x", 64)
	for _, tc := range []struct{ name, want string }{
		{long, "must be no more than 63 bytes"},
		{"has space", "a valid label must be an empty string or consist of alphanumeric characters"},
	} {
		dir := t.TempDir()
		doc := fmt.Sprintf("schema: olm.package\nname: %q\ndefaultChannel: stable\n", tc.name)
		if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		c := loadFixture(t, dir)
		if len(c.Packages()) != 0 || len(c.Rejections) != 1 {
			t.Fatalf("%q: packages %d, rejections %v; want the package rejected", tc.name, len(c.Packages()), c.Rejections)
		}
		r := c.Rejections[0]
		if !strings.Contains(r.Reason, fmt.Sprintf("package name %q cannot label what an installation makes", tc.name)) || !strings.Contains(r.Reason, tc.want) {
			t.Errorf("%q: rejection %+v, want it named and %q", tc.name, r, tc.want)
		}
	}
}
