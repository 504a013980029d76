package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

// Every parser of catalog input returns an error on bad input and never panics. The seed
// corpora are the fixtures; inputs the fuzzer found that once failed are kept in
// testdata/fuzz/<FuzzName>/.
//
//	go test -run=^$ -fuzz=FuzzParseCSV -fuzztime=20s ./internal/catalog/

// addFiles seeds a fuzz target with the fixture files matching a glob.
func addFiles(f *testing.F, globs ...string) {
	f.Helper()
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// checkNoDecoderPanic fails when a third-party decoder panicked: noPanic turned it into
// an error, which is what production wants, but the fuzzer should still show it.
func checkNoDecoderPanic(t *testing.T, err error) {
	if err != nil && strings.Contains(err.Error(), "decoder panic") {
		t.Errorf("decoder panicked: %v", err)
	}
}

func FuzzParseCSV(f *testing.F) {
	addFiles(f, "testdata/layouts/*/*/*clusterserviceversion.yaml", "testdata/layouts/*/*/manifests/*.clusterserviceversion.yaml", "testdata/bad/*/*/csv.yaml")
	f.Add([]byte("kind: ClusterServiceVersion\nmetadata: {name: x}\nspec: {version: 1}\n"))
	f.Add([]byte("kind: ClusterServiceVersion\nmetadata: {name: x, annotations: {olm.skipRange: '>=1'}}\nspec: {customresourcedefinitions: {owned: [{name: a}]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		csv, versionErr, err := parseCSV(data)
		checkNoDecoderPanic(t, err)
		if err != nil {
			return
		}
		if csv == nil || csv.Name == "" {
			t.Fatalf("no error but CSV %v", csv)
		}
		_ = versionErr
		var b Bundle
		_ = applyCSV(&b, csv)
	})
}

func FuzzParseManifest(f *testing.F) {
	addFiles(f, "testdata/layouts/*/*/*.yaml", "testdata/layouts/*/*/manifests/*.yaml", "testdata/bad/*/*/*.yaml")
	f.Add([]byte("apiVersion: v1\nkind: CustomResourceDefinition\nspec: [1]\n"))
	f.Add([]byte("{\"kind\":\"CustomResourceDefinition\",\"apiVersion\":\"x\"}\n{\"a\":1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs := splitDocuments(data)
		for _, d := range docs {
			if !bytes.Contains(data, d.data) || d.line < 1 {
				t.Fatalf("document %q at line %d is not from the input", d.data, d.line)
			}
			_, err := parseManifest(d.data)
			checkNoDecoderPanic(t, err)
		}
		_, err := ContentFromFiles([]File{{Name: "m.yaml", Data: data}})
		checkNoDecoderPanic(t, err)
		_, err = ObjectsFromFiles([]File{{Name: "m.yaml", Data: data}})
		checkNoDecoderPanic(t, err)
	})
}

func FuzzParsePackageManifest(f *testing.F) {
	addFiles(f, "testdata/*/*/*.package.yaml")
	f.Add([]byte("packageName: p\nchannels:\n- {name: a, currentCSV: b}\n"))
	f.Add([]byte("packageName: p\nchannels: [&a {name: *a}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pm, err := parsePackageManifest(data)
		checkNoDecoderPanic(t, err)
		if err == nil && (pm.PackageName == "" || len(pm.Channels) == 0 || pm.DefaultChannel == "") {
			t.Fatalf("accepted an incomplete package manifest %+v", pm)
		}
	})
}

func FuzzParseAnnotations(f *testing.F) {
	addFiles(f, "testdata/layouts/*/*/metadata/annotations.yaml")
	f.Add([]byte("annotations: {operators.operatorframework.io.bundle.package.v1: p, operators.operatorframework.io.bundle.channels.v1: ',,a'}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseAnnotations(data)
		checkNoDecoderPanic(t, err)
		if err == nil && (a.Package == "" || len(a.Channels) == 0) {
			t.Fatalf("accepted incomplete annotations %+v", a)
		}
	})
}

func FuzzParseDependencies(f *testing.F) {
	addFiles(f, "testdata/layouts/*/*/metadata/dependencies.yaml")
	f.Add([]byte("dependencies:\n- type: olm.package\n  value: {packageName: p, version: '>=1.0.0 <2.0.0 || 3.x'}\n"))
	f.Add([]byte("dependencies:\n- type: olm.constraint\n  value: {cel: {rule: 'true'}}\n"))
	f.Add([]byte("dependencies:\n- type: olm.label\n  value: {label: cache}\n- type: olm.constraint\n  value: {failureMessage: m, all: {constraints: [{package: {packageName: p, versionRange: '>=1.0.0'}}, " +
		"{not: {constraints: [{gvk: {group: g, version: v1, kind: K}}]}}, {cel: {rule: 'properties.exists(p, p.type == \"x\" && semver_compare(p.value, \"1.0.0\") > 0)'}}]}}\n"))
	sub := Subject{Package: "p", Version: semver.MustParse("1.2.0"), APIs: []GVK{{Group: "g", Version: "v1", Kind: "K"}},
		Properties: []Property{{Type: "x", Value: []byte(`"1.1.0"`)}, {Type: PropLabel, Value: []byte(`{"label":"cache"}`)}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		deps, _, err := parseDependencies(data)
		checkNoDecoderPanic(t, err)
		for _, d := range deps {
			if d.Type == DependencyPackage && d.Versions.Range == nil {
				t.Fatalf("package dependency without a range: %+v", d)
			}
			if d.Type == DependencyConstraint {
				// What loaded is what the resolver evaluates and messages print.
				if err := checkConstraint(d.Constraint, "", 0); err != nil {
					t.Fatalf("loaded constraint fails its check: %v", err)
				}
				_, _ = d.Matches(sub)
				_ = d.String()
			}
		}
	})
}

// FuzzParseProperties: metadata/properties.yaml is the bundle author's. What it keeps is
// what CEL constraints read and what `catalog push` writes into a File-Based Catalog, so
// each kept property has a type and a value that is JSON.
func FuzzParseProperties(f *testing.F) {
	addFiles(f, "testdata/layouts/*/*/metadata/properties.yaml")
	f.Add([]byte("properties:\n- type: olm.label\n  value: {label: cache}\n- type: certified\n  value: true\n- type: olm.package\n  value: {packageName: p, version: 1.0.0}\n"))
	f.Add([]byte("properties:\n- type: olm.label\n  value: {}\n"))
	f.Add([]byte("properties:\n- value: 1\n"))
	f.Add([]byte("properties: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := parseProperties(data)
		checkNoDecoderPanic(t, err)
		for _, p := range props {
			if p.Type == "" || !keptProperty(p.Type) {
				t.Fatalf("kept a property of type %q", p.Type)
			}
			if len(p.Value) > 0 && !json.Valid(p.Value) {
				t.Fatalf("kept property %s with a value that is not JSON: %q", p.Type, p.Value)
			}
		}
	})
}

func FuzzParseFBC(f *testing.F) {
	addFiles(f, "testdata/layouts/*/catalog.yaml", "testdata/layouts/index.json", "testdata/bad/*/catalog.yaml")
	f.Add([]byte(`{"schema":"olm.bundle","package":"p","name":"p.v1","properties":[{"type":"olm.bundle.object","value":{"data":"a2luZDogeA=="}}]}`))
	f.Add([]byte(`{"schema":"olm.bundle","package":"p","name":"p.v1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},` +
		`{"type":"olm.constraint","value":{"any":{"constraints":[{"gvk":{"group":"g","version":"v1","kind":"K"}},{"cel":{"rule":"true"}}]}}},` +
		`{"type":"olm.label.required","value":{"label":"l"}},{"type":"olm.label","value":{"label":"m"}},{"type":"x","value":[1]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		blobs, errs := parseFBC(data)
		for _, err := range errs {
			checkNoDecoderPanic(t, err)
		}
		for _, blob := range blobs {
			if blob.Schema != SchemaBundle {
				continue
			}
			fb, err := bundleFromFBC("p/catalog.yaml", blob)
			if err != nil {
				continue
			}
			for i, o := range fb.objects {
				if o.Ref != "" && escapes(o.Ref) {
					t.Fatalf("object ref %q escapes", o.Ref)
				}
				if len(o.Data) > 0 {
					checkNoDecoderPanic(t, applyObjects(fb.bundle, File{Name: objectFileName(i, o), Data: o.Data}))
				}
			}
		}
	})
}
