package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
)

func loadFixture(t *testing.T, dir string) *Catalog {
	t.Helper()
	c, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// copyFixture copies a fixture tree into a temporary directory the test may change.
func copyFixture(t *testing.T, dir string) string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "catalog")
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return tmp
}

func TestLoadLayouts(t *testing.T) {
	c := loadFixture(t, "testdata/layouts")
	if len(c.Rejections) > 0 || len(c.Warnings) > 0 {
		t.Fatalf("rejections %v, warnings %v", c.Rejections, c.Warnings)
	}
	type channel struct{ name, head string }
	tests := []struct {
		pkg      string
		layout   Layout
		def      string
		channels []channel
		bundles  []string // CSV name@version, ascending
	}{
		{"bundlepkg", LayoutBundle, "stable", []channel{{"alpha", "bundlepkg.v0.2.0"}, {"stable", "bundlepkg.v0.2.0"}}, []string{"bundlepkg.v0.1.0@0.1.0", "bundlepkg.v0.2.0@0.2.0"}},
		{"fbcpkg", LayoutFBC, "stable", []channel{{"fast", "fbcpkg.v2.0.0"}, {"stable", "fbcpkg.v2.0.0"}}, []string{"fbcpkg.v1.0.0@1.0.0", "fbcpkg.v1.1.0@1.1.0", "fbcpkg.v2.0.0@2.0.0"}},
		{"flatpkg", LayoutFlat, FlatChannel, []channel{{FlatChannel, "flatpkg.v0.3"}}, []string{"flatpkg.v0.1.0@0.1.0", "flatpkg.v0.2.0@0.2.0", "flatpkg.v0.3@0.3.0"}},
		{"jsonpkg", LayoutFBC, "candidate", []channel{{"candidate", "jsonpkg.v0.2.0"}}, []string{"jsonpkg.v0.1.0@0.1.0", "jsonpkg.v0.2.0@0.2.0"}},
		{"manifestpkg", LayoutPackageManifest, "stable", []channel{{"beta", "manifestpkg.v1.2.0-beta.1"}, {"stable", "manifestpkg.v1.1.0"}}, []string{"manifestpkg.v1.0.0@1.0.0", "manifestpkg.v1.1.0@1.1.0", "manifestpkg.v1.2.0-beta.1@1.2.0-beta.1"}},
	}
	var names []string
	for _, p := range c.Packages() {
		names = append(names, p.Name)
	}
	if want := []string{"bundlepkg", "fbcpkg", "flatpkg", "jsonpkg", "manifestpkg"}; !slices.Equal(names, want) {
		t.Fatalf("packages %v, want %v", names, want)
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			p := c.Package(tt.pkg)
			if p.Layout != tt.layout || p.DefaultChannel != tt.def {
				t.Errorf("layout %s default %q, want %s %q", p.Layout, p.DefaultChannel, tt.layout, tt.def)
			}
			var chans []channel
			for _, ch := range p.Channels {
				chans = append(chans, channel{ch.Name, ch.Head})
			}
			if !slices.Equal(chans, tt.channels) {
				t.Errorf("channels %v, want %v", chans, tt.channels)
			}
			var bundles []string
			for _, b := range p.Bundles {
				bundles = append(bundles, b.CSVName+"@"+b.Version.String())
				if !ValidDigest(b.Digest) {
					t.Errorf("%s: digest %q", b.CSVName, b.Digest)
				}
			}
			if !slices.Equal(bundles, tt.bundles) {
				t.Errorf("bundles %v, want %v", bundles, tt.bundles)
			}
		})
	}
}

func TestBundleMetadata(t *testing.T) {
	c := loadFixture(t, "testdata/layouts")
	t.Run("flat: replaces derived, version from the folder name", func(t *testing.T) {
		b := c.BundleByCSV("flatpkg.v0.3")
		if b.Version.String() != "0.3.0" || b.Replaces != "flatpkg.v0.2.0" || b.RelPath != "flatpkg/v0.3" {
			t.Errorf("got %s replaces %q at %s", b.Version, b.Replaces, b.RelPath)
		}
		// The Dockerfile is not part of the bundle.
		if want := []string{"flatpkg.clusterserviceversion.yaml", "gadgets.crd.yaml"}; !slices.Equal(b.Files, want) {
			t.Errorf("files %v, want %v", b.Files, want)
		}
	})
	t.Run("package manifest: CSV fields", func(t *testing.T) {
		b := c.BundleByCSV("manifestpkg.v1.1.0")
		if b.SkipRange.Raw != ">=0.9.0 <1.0.0" || !b.SkipRange.Contains(semver.MustParse("0.9.5")) || b.MinKubeVersion != "1.20.0" {
			t.Errorf("skipRange %q minKube %q", b.SkipRange.Raw, b.MinKubeVersion)
		}
		if len(b.InstallModes) != 4 || b.InstallModes[2].Type != "MultiNamespace" || b.InstallModes[2].Supported {
			t.Errorf("install modes %v", b.InstallModes)
		}
		if want := []CRDRef{{Group: "manifest.example.com", Version: "v1", Kind: "Widget", Plural: "widgets"}}; !slices.Equal(b.OwnedCRDs, want) {
			t.Errorf("owned %v", b.OwnedCRDs)
		}
		if got := c.BundleByCSV("manifestpkg.v1.2.0-beta.1").Skips; !slices.Equal(got, []string{"manifestpkg.v1.0.0"}) {
			t.Errorf("skips %v", got)
		}
		if got := c.BundleByCSV("manifestpkg.v1.0.0").Channels; !slices.Equal(got, []string{"beta", "stable"}) {
			t.Errorf("channels %v", got)
		}
	})
	t.Run("bundle layout: dependencies and files", func(t *testing.T) {
		b := c.BundleByCSV("bundlepkg.v0.2.0")
		if len(b.Dependencies) != 2 {
			t.Fatalf("dependencies %v", b.Dependencies)
		}
		pkgDep, gvkDep := b.Dependencies[0], b.Dependencies[1]
		if pkgDep.Type != DependencyPackage || pkgDep.Package != "manifestpkg" || !pkgDep.Versions.Contains(semver.MustParse("1.1.0")) || pkgDep.Versions.Contains(semver.MustParse("2.0.0")) {
			t.Errorf("package dependency %+v", pkgDep)
		}
		if gvkDep.Type != DependencyGVK || gvkDep.GVK != (GVK{Group: "flat.example.com", Version: "v1", Kind: "Gadget"}) {
			t.Errorf("gvk dependency %+v", gvkDep)
		}
		want := []string{"manifests/bundle.example.com_gizmos.yaml", "manifests/bundlepkg-metrics_v1_service.yaml", "manifests/bundlepkg.clusterserviceversion.yaml", "metadata/annotations.yaml", "metadata/dependencies.yaml"}
		if !slices.Equal(b.Files, want) {
			t.Errorf("files %v", b.Files)
		}
	})
	t.Run("FBC: properties, csv metadata and objects", func(t *testing.T) {
		b := c.BundleByCSV("fbcpkg.v2.0.0")
		if b.Image != "registry.example.com/fbcpkg-bundle:v2.0.0" || b.RelPath != "fbcpkg/catalog.yaml" {
			t.Errorf("image %q relPath %q", b.Image, b.RelPath)
		}
		var deps []string
		for _, d := range b.Dependencies {
			deps = append(deps, d.String())
		}
		if want := []string{"olm.package bundlepkg >=0.2.0", "olm.gvk manifest.example.com/v1/Widget"}; !slices.Equal(deps, want) {
			t.Errorf("dependencies %v", deps)
		}
		if want := []string{"objects/000.yaml", "objects/001.yaml", "objects/002.yaml", "olm.bundle.json"}; !slices.Equal(b.Files, want) {
			t.Errorf("files %v", b.Files)
		}
		// Without a CSV object the plural comes from olm.csv.metadata, the edges from the channel.
		b1 := c.BundleByCSV("fbcpkg.v1.1.0")
		if b1.OwnedCRDs[0].Plural != "sprockets" || b1.MinKubeVersion != "1.21.0" || b1.Replaces != "fbcpkg.v1.0.0" {
			t.Errorf("v1.1.0: %+v", b1)
		}
	})
}

func TestLookups(t *testing.T) {
	c := loadFixture(t, "testdata/layouts")
	if b := c.Bundle("manifestpkg", semver.MustParse("1.1.0")); b == nil || b.CSVName != "manifestpkg.v1.1.0" {
		t.Errorf("by version: %v", b)
	}
	if b := c.Bundle("manifestpkg", semver.MustParse("1.1.1")); b != nil {
		t.Errorf("by absent version: %v", b)
	}
	if b := c.BundleByCSV("bundlepkg.v0.1.0"); b == nil || b.Package != "bundlepkg" {
		t.Errorf("by CSV: %v", b)
	}
	if b := c.BundleByDigest(c.BundleByCSV("bundlepkg.v0.1.0").Digest); b == nil || b.CSVName != "bundlepkg.v0.1.0" {
		t.Errorf("by digest: %v", b)
	}
	for _, tt := range []struct {
		gvk  GVK
		want []string
	}{
		{GVK{Group: "fbc.example.com", Kind: "Sprocket", Version: "v1"}, []string{"fbcpkg.v1.0.0", "fbcpkg.v1.1.0", "fbcpkg.v2.0.0"}},
		{GVK{Group: "json.example.com", Kind: "Cog"}, []string{"jsonpkg.v0.2.0"}},
		{GVK{Group: "json.example.com", Kind: "Cog", Version: "v1"}, nil},
	} {
		var got []string
		for _, b := range c.ProvidersOf(tt.gvk) {
			got = append(got, b.CSVName)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("providers of %v: %v, want %v", tt.gvk, got, tt.want)
		}
	}
}

func TestSuccessorsAndHead(t *testing.T) {
	c := loadFixture(t, "testdata/layouts")
	tests := []struct {
		pkg, channel, from string
		want               []string
		err                string
	}{
		{"fbcpkg", "stable", "1.0.0", []string{"fbcpkg.v2.0.0", "fbcpkg.v1.1.0"}, ""},
		{"fbcpkg", "stable", "1.1.0", []string{"fbcpkg.v2.0.0"}, ""},
		{"fbcpkg", "stable", "0.7.0", []string{"fbcpkg.v2.0.0"}, ""}, // pruned: skipRange only
		{"fbcpkg", "fast", "1.1.0", nil, ""},
		{"manifestpkg", "", "1.0.0", []string{"manifestpkg.v1.1.0"}, ""},
		{"manifestpkg", "beta", "1.0.0", []string{"manifestpkg.v1.2.0-beta.1", "manifestpkg.v1.1.0"}, ""},
		{"manifestpkg", "stable", "0.9.1", []string{"manifestpkg.v1.1.0"}, ""},
		{"flatpkg", "", "0.1.0", []string{"flatpkg.v0.2.0"}, ""},
		{"nopkg", "", "1.0.0", nil, `package "nopkg": not found`},
		{"flatpkg", "beta", "0.1.0", nil, `channel "beta" of package "flatpkg": not found (channels: stable)`},
	}
	for _, tt := range tests {
		t.Run(tt.pkg+"/"+tt.channel+"/"+tt.from, func(t *testing.T) {
			got, err := c.Successors(tt.pkg, tt.channel, semver.MustParse(tt.from))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, ErrNotFound) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			var names []string
			for _, b := range got {
				names = append(names, b.CSVName)
			}
			if err != nil || !slices.Equal(names, tt.want) {
				t.Errorf("got %v, %v; want %v", names, err, tt.want)
			}
		})
	}
	for pkg, want := range map[string]string{"manifestpkg": "manifestpkg.v1.1.0", "jsonpkg": "jsonpkg.v0.2.0", "flatpkg": "flatpkg.v0.3"} {
		if b, err := c.Head(pkg, ""); err != nil || b.CSVName != want {
			t.Errorf("head of %s: %v %v, want %s", pkg, b, err, want)
		}
	}
	if b, _ := c.SuccessorsOf("manifestpkg", "beta", "manifestpkg.v1.0.0", semver.MustParse("1.0.0")); len(b) != 2 {
		t.Errorf("SuccessorsOf: %v", b)
	}
}

func TestContent(t *testing.T) {
	c := loadFixture(t, "testdata/layouts")
	tests := []struct {
		csv           string
		crds, objects int
		err           error
	}{
		{"flatpkg.v0.1.0", 1, 0, nil},
		{"flatpkg.v0.3", 1, 0, nil},
		{"manifestpkg.v1.1.0", 1, 1, nil},
		{"bundlepkg.v0.2.0", 1, 1, nil},
		{"fbcpkg.v2.0.0", 1, 1, nil},
		{"jsonpkg.v0.1.0", 0, 0, ErrNoContent},
	}
	for _, tt := range tests {
		t.Run(tt.csv, func(t *testing.T) {
			b := c.BundleByCSV(tt.csv)
			bc, err := c.Content(b)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bc.CSV.Name != tt.csv || !bc.CSV.Spec.Version.Version.Equals(b.Version) || len(bc.CRDs) != tt.crds || len(bc.Objects) != tt.objects {
				t.Errorf("csv %s %s, %d CRDs, %d objects", bc.CSV.Name, bc.CSV.Spec.Version, len(bc.CRDs), len(bc.Objects))
			}
			for _, crd := range bc.CRDs {
				if crd.GetKind() != crdKind || crd.GetAPIVersion() == "" {
					t.Errorf("CRD %v", crd.Object)
				}
			}
			files, err := c.Files(b)
			if err != nil || DigestFiles(files) != b.Digest {
				t.Errorf("files digest %v", err)
			}
		})
	}
	if c.BundleByCSV("flatpkg.v0.1.0").Files[1] != "gadgets.crd.yaml" {
		t.Fatal("fixture changed")
	}
	if bc, _ := c.Content(c.BundleByCSV("flatpkg.v0.1.0")); bc.CRDs[0].GetAPIVersion() != "apiextensions.k8s.io/v1beta1" {
		t.Errorf("v1beta1 CRD not kept as written: %s", bc.CRDs[0].GetAPIVersion())
	}
}

func TestContentDetectsChange(t *testing.T) {
	dir := copyFixture(t, "testdata/layouts")
	c := loadFixture(t, dir)
	// A comment added to the catalog file leaves every blob, so every digest, as it was.
	appendTo(t, filepath.Join(dir, "fbcpkg", "catalog.yaml"), "\n# edited\n")
	if _, err := c.Content(c.BundleByCSV("fbcpkg.v2.0.0")); err != nil {
		t.Errorf("comment in the catalog file: %v", err)
	}
	for name, file := range map[string]string{
		"manifestpkg.v1.0.0": "manifestpkg/1.0.0/widgets.crd.yaml",
		"fbcpkg.v2.0.0":      "fbcpkg/objects/extra-configmap.yaml", // an olm.bundle.object ref
	} {
		b := c.BundleByCSV(name)
		appendTo(t, filepath.Join(dir, file), "\n# edited\n")
		_, err := c.Content(b)
		if !errors.Is(err, ErrDigestMismatch) || !strings.Contains(err.Error(), b.RelPath) {
			t.Errorf("%s: err = %v, want a digest mismatch naming %s", name, err, b.RelPath)
		}
	}
}

func appendTo(t *testing.T, file, text string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDigests(t *testing.T) {
	c1 := loadFixture(t, "testdata/layouts")
	// The same catalog somewhere else: bundle digests name files relative to the bundle,
	// so they and the catalog digest do not move with it.
	dir := copyFixture(t, "testdata/layouts")
	c2 := loadFixture(t, dir)
	if c1.Digest != c2.Digest || !ValidDigest(c1.Digest) {
		t.Fatalf("digests differ after a copy: %s %s", c1.Digest, c2.Digest)
	}
	// A package file change that moves no bundle changes the catalog digest only.
	pf := filepath.Join(dir, "manifestpkg", "manifest.package.yaml")
	data, err := os.ReadFile(pf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pf, []byte(strings.Replace(string(data), "defaultChannel: stable", "defaultChannel: beta", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c3 := loadFixture(t, dir)
	if c3.Digest == c1.Digest {
		t.Error("catalog digest unchanged after a default channel change")
	}
	if c3.BundleByCSV("manifestpkg.v1.1.0").Digest != c1.BundleByCSV("manifestpkg.v1.1.0").Digest {
		t.Error("bundle digest changed though its files did not")
	}
	files := []File{{Name: "b", Data: []byte("2")}, {Name: "a", Data: []byte("1")}}
	if DigestFiles(files) != DigestFiles([]File{files[1], files[0]}) {
		t.Error("DigestFiles depends on order")
	}
	if DigestFiles([]File{{Name: "a", Data: []byte("b")}}) == DigestFiles([]File{{Name: "ab", Data: nil}}) {
		t.Error("DigestFiles is ambiguous")
	}
}

func TestLoadIfChanged(t *testing.T) {
	dir := copyFixture(t, "testdata/layouts")
	c := loadFixture(t, dir)
	got, changed, err := LoadIfChanged(dir, c, Options{})
	if err != nil || changed || got != c {
		t.Fatalf("unchanged tree: changed=%v err=%v same=%v", changed, err, got == c)
	}
	if got, changed, _ := LoadIfChanged(dir, c, Options{MaxFileSize: 1 << 20}); !changed || got == c {
		t.Error("other options must load afresh")
	}
	if got, changed, _ := LoadIfChanged(dir, nil, Options{}); !changed || got == nil {
		t.Error("no previous catalog must load")
	}
	steps := []struct {
		name   string
		change func(t *testing.T)
	}{
		{"mtime", func(t *testing.T) {
			f := filepath.Join(dir, "flatpkg", "0.1.0", "gadgets.crd.yaml")
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(f, later, later); err != nil {
				t.Fatal(err)
			}
		}},
		{"new file", func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"content", func(t *testing.T) { appendTo(t, filepath.Join(dir, "index.json"), "\n") }},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.change(t)
			next, changed, err := LoadIfChanged(dir, c, Options{})
			if err != nil || !changed || next == c {
				t.Fatalf("changed=%v err=%v", changed, err)
			}
			c = next
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "absent"), Options{}); err == nil || !strings.Contains(err.Error(), "loading catalog") {
		t.Errorf("absent dir: %v", err)
	}
	empty := t.TempDir()
	c, err := Load(empty, Options{})
	if err != nil || len(c.Packages()) != 0 || !ValidDigest(c.Digest) {
		t.Errorf("empty dir: %v %v", c, err)
	}
}

func TestBundleByRef(t *testing.T) {
	c := loadFixture(t, "testdata/layouts")
	tests := []struct{ ref, want, err string }{
		{"manifestpkg.v1.1.0", "manifestpkg.v1.1.0", ""},              // CSV name
		{"flatpkg.0.2.0", "flatpkg.v0.2.0", ""},                       // <package>.<version>
		{"flatpkg.v0.3.0", "flatpkg.v0.3", ""},                        // <package>.v<version>
		{"manifestpkg.1.2.0-beta.1", "manifestpkg.v1.2.0-beta.1", ""}, // prerelease
		{"flatpkg.0.9.0", "", `bundle "flatpkg.0.9.0": package "flatpkg" has no version 0.9.0: not found`},
		{"flatpkg.0.2", "", `bundle "flatpkg.0.2": no CSV of that name and no <package>.<version> match: not found`},
		{"nopkg.1.0.0", "", `bundle "nopkg.1.0.0": no CSV of that name and no <package>.<version> match: not found`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			b, err := c.BundleByRef(tt.ref)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, ErrNotFound) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || b.CSVName != tt.want {
				t.Errorf("got %v, %v; want %s", b, err, tt.want)
			}
		})
	}
}

func TestShortDigest(t *testing.T) {
	for in, want := range map[string]string{
		"sha256:11f1aa95ef4caf59b22bcec08ee247c4244e68fb531f9642436420b43ec576d8": "sha256:11f1aa95ef4c",
		"sha256:11f1":  "sha256:11f1",
		"":             "",
		"not-a-digest": "not-a-digest",
	} {
		if got := ShortDigest(in); got != want {
			t.Errorf("ShortDigest(%q) = %q, want %q", in, got, want)
		}
	}
}
