package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		docs  []string
		lines []int
	}{
		{"single", "a: 1\n", []string{"a: 1\n"}, []int{1}},
		{"leading marker", "---\na: 1\n", []string{"---\na: 1\n"}, []int{1}},
		{"two", "a: 1\n---\nb: 2\n", []string{"a: 1\n", "---\nb: 2\n"}, []int{1, 2}},
		{"blank and comment documents dropped", "# c\n---\n\n---\na: 1\n---\n", []string{"---\na: 1\n"}, []int{4}},
		{"marker with content", "a: 1\n--- {b: 2}\n", []string{"a: 1\n", "--- {b: 2}\n"}, []int{1, 2}},
		{"not a marker", "a: |\n  ---x\n----\n", []string{"a: |\n  ---x\n----\n"}, []int{1}},
		{"CRLF", "a: 1\r\n---\r\nb: 2\r\n", []string{"a: 1\r\n", "---\r\nb: 2\r\n"}, []int{1, 2}},
		{"BOM", "\xef\xbb\xbfa: 1\n", []string{"a: 1\n"}, []int{1}},
		{"JSON stream", "{\"a\":1}\n\n{\"b\":\n2}", []string{`{"a":1}`, "{\"b\":\n2}"}, []int{1, 3}},
		{"YAML flow falls back", "{a: 1}\n---\n{b: 2}\n", []string{"{a: 1}\n", "---\n{b: 2}\n"}, []int{1, 2}},
		{"empty", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var docs []string
			var lines []int
			for _, d := range splitDocuments([]byte(tt.in)) {
				docs = append(docs, string(d.data))
				lines = append(lines, d.line)
			}
			if !slices.Equal(docs, tt.docs) || !slices.Equal(lines, tt.lines) {
				t.Errorf("got %q at %v, want %q at %v", docs, lines, tt.docs, tt.lines)
			}
		})
	}
}

func TestSniffKind(t *testing.T) {
	tests := map[string]string{
		"apiVersion: v1\nkind: ClusterServiceVersion\n":        "ClusterServiceVersion",
		"kind: \"CustomResourceDefinition\" # comment\n":       "CustomResourceDefinition",
		"spec:\n  names:\n    kind: Foo\n":                     "",
		"{\"kind\": \"ClusterServiceVersion\"}":                "",
		"metadata:\n  name: x\nkind: 'Service'\nkind: Other\n": "Service",
	}
	for in, want := range tests {
		if got := sniffKind([]byte(in)); got != want {
			t.Errorf("sniffKind(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDocErrorLine(t *testing.T) {
	doc := document{line: 21}
	err := docError("crds.yaml", doc, errors.New("yaml: line 4: did not find expected key"))
	if got, want := err.Error(), "crds.yaml: yaml: line 24: did not find expected key"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestVersions(t *testing.T) {
	strict := []struct {
		raw, want, err string
	}{
		{`"1.2.3"`, "1.2.3", ""},
		{`"1.2.3-rc.1+build.5"`, "1.2.3-rc.1+build.5", ""},
		{``, "0.0.0", "spec.version is absent"},
		{`null`, "0.0.0", "spec.version is absent"},
		{`""`, "0.0.0", "spec.version is absent"},
		{`"v1.2.3"`, "", `spec.version "v1.2.3" is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD]): Invalid character(s) found in major number "v1"`},
		{`"1.0"`, "", `spec.version "1.0" is not a semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD]): No Major.Minor.Patch elements found`},
		{`1`, "", "spec.version 1: must be a string holding a semantic version"},
	}
	for _, tt := range strict {
		t.Run("strict "+tt.raw, func(t *testing.T) {
			v, err := strictVersion([]byte(tt.raw))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || v.String() != tt.want {
				t.Errorf("got %s, %v; want %s", v, err, tt.want)
			}
		})
	}
	lenient := map[string]string{"v0.9.4": "0.9.4", "1.0": "1.0.0", "2": "2.0.0", "0.9.2-clusterwide": "0.9.2-clusterwide", "latest": "", "": "", "v": ""}
	for in, want := range lenient {
		v, ok := lenientVersion(in)
		if got := map[bool]string{true: v.String(), false: ""}[ok]; got != want {
			t.Errorf("lenientVersion(%q) = %q, want %q", in, got, want)
		}
	}
	names := map[string]string{"etcdoperator.v0.9.4": "0.9.4", "prometheusoperator.0.22.2": "0.22.2", "a.b.v1.2": "1.2.0", "noversion": "", "x.latest": ""}
	for in, want := range names {
		v, ok := versionFromCSVName(in)
		if got := map[bool]string{true: v.String(), false: ""}[ok]; got != want {
			t.Errorf("versionFromCSVName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePackageManifest(t *testing.T) {
	tests := []struct {
		name, in, err string
		def           string
	}{
		{"ok", "packageName: p\nchannels:\n- name: a\n  currentCSV: p.v1\n- name: b\n  currentCSV: p.v2\ndefaultChannel: b\n", "", "b"},
		{"single channel is the default", "packageName: p\nchannels:\n- name: a\n  currentCSV: p.v1\n", "", "a"},
		{"numeric channel name kept as written", "packageName: p\nchannels:\n- name: 1.0\n  currentCSV: p.v1\n", "", "1.0"},
		{"no name", "channels:\n- name: a\n  currentCSV: p.v1\n", "packageName is empty", ""},
		{"escape", "packageName: ../x\nchannels:\n- name: a\n  currentCSV: p.v1\n", `packageName "../x": path escape: a name must not contain '/', '\' or be '..'`, ""},
		{"no channels", "packageName: p\n", "channels: at least one channel is required", ""},
		{"empty currentCSV", "packageName: p\nchannels:\n- name: a\n", "channels[0].currentCSV is empty", ""},
		{"duplicate channel", "packageName: p\nchannels:\n- {name: a, currentCSV: x}\n- {name: a, currentCSV: y}\n", `channels[1].name "a": duplicate channel`, ""},
		{"default needed", "packageName: p\nchannels:\n- {name: a, currentCSV: x}\n- {name: b, currentCSV: y}\n", "defaultChannel is required when there are several channels", ""},
		{"default unknown", "packageName: p\nchannels:\n- {name: a, currentCSV: x}\ndefaultChannel: z\n", `defaultChannel "z" is not one of the channels`, ""},
		{"wrong type", "packageName: p\nchannels: nope\n", "yaml: unmarshal errors:\n  line 2: cannot unmarshal !!str `nope` into []struct { Name string \"yaml:\\\"name\\\"\"; CurrentCSV string \"yaml:\\\"currentCSV\\\"\" }", ""},
		{"syntax", "packageName: [\n", "yaml: line 1: did not find expected node content", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pm, err := parsePackageManifest([]byte(tt.in))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || pm.DefaultChannel != tt.def {
				t.Fatalf("got %+v, %v; want default %q", pm, err, tt.def)
			}
		})
	}
}

func TestParseAnnotations(t *testing.T) {
	const prefix = "annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n"
	tests := []struct {
		name, in, err string
		channels      []string
		def           string
	}{
		{"channels split and trimmed", prefix + "  operators.operatorframework.io.bundle.channels.v1: alpha, 1.x ,\n  operators.operatorframework.io.bundle.channel.default.v1: 1.x\n", "", []string{"alpha", "1.x"}, "1.x"},
		{"no channel", prefix, "annotations.operators.operatorframework.io.bundle.channels.v1: at least one channel is required", nil, ""},
		{"no package", "annotations:\n  operators.operatorframework.io.bundle.channels.v1: a\n", "annotations.operators.operatorframework.io.bundle.package.v1 is empty", nil, ""},
		{"bad channel", prefix + "  operators.operatorframework.io.bundle.channels.v1: a/b\n", `annotations.operators.operatorframework.io.bundle.channels.v1 "a/b": path escape: a name must not contain '/', '\' or be '..'`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parseAnnotations([]byte(tt.in))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(a.Channels, tt.channels) || a.DefaultChannel != tt.def || a.Package != "p" {
				t.Fatalf("got %+v, %v", a, err)
			}
		})
	}
}

func TestParseDependencies(t *testing.T) {
	tests := []struct {
		name, in, err string
		deps          []string
		ignored       []string
	}{
		{
			"package and gvk",
			"dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: '>=0.9.0 <0.10.0'}\n- type: olm.gvk\n  value: {group: 'g.io ', kind: K, version: v1}\n",
			"", []string{"olm.package etcd >=0.9.0 <0.10.0", "olm.gvk g.io/v1/K"}, nil,
		},
		{
			"unevaluated types reported",
			"dependencies:\n- type: olm.future\n  value: {x: y}\n",
			"", nil, []string{`dependencies[0] of type "olm.future"`},
		},
		{"label", "dependencies:\n- type: olm.label\n  value: {label: x}\n", "", []string{`olm.label "x"`}, nil},
		{"empty label", "dependencies:\n- type: olm.label\n  value: {label: ''}\n", "dependencies[0] (olm.label): label: is empty", nil, nil},
		{
			// A top-level package or gvk constraint is the plain dependency it means.
			"constraint: package and gvk",
			"dependencies:\n- type: olm.constraint\n  value: {failureMessage: m, package: {packageName: etcd, versionRange: '>=0.9.0'}}\n" +
				"- type: olm.constraint\n  value: {gvk: {group: g.io, version: v1, kind: K}}\n",
			"", []string{`"m" (olm.package etcd >=0.9.0)`, "olm.gvk g.io/v1/K"}, nil,
		},
		{
			"constraint: compound and cel",
			"dependencies:\n- type: olm.constraint\n  value:\n    failureMessage: needs a certified etcd\n    all:\n      constraints:\n" +
				"      - package: {packageName: etcd, versionRange: '>=0.9.0'}\n      - not: {constraints: [{package: {packageName: etcd, versionRange: '=0.9.2'}}]}\n" +
				"      - cel: {rule: 'properties.exists(p, p.type == \"certified\")'}\n",
			"", []string{`"needs a certified etcd" (olm.constraint all of (package etcd >=0.9.0, none of (package etcd =0.9.2), cel "properties.exists(p, p.type == \"certified\")"))`}, nil,
		},
		{"constraint: two kinds", "dependencies:\n- type: olm.constraint\n  value: {gvk: {group: g, version: v1, kind: K}, cel: {rule: 'true'}}\n", "dependencies[0] (olm.constraint): gvk and cel are set, and a constraint is one of them", nil, nil},
		{"constraint: no kind", "dependencies:\n- type: olm.constraint\n  value: {failureMessage: m}\n", "dependencies[0] (olm.constraint): none of package, gvk, cel, all, any or not is set", nil, nil},
		{"constraint: unknown field", "dependencies:\n- type: olm.constraint\n  value: {none: {constraints: []}}\n", `dependencies[0] (olm.constraint): json: unknown field "none"`, nil, nil},
		{"constraint: nested bad range", "dependencies:\n- type: olm.constraint\n  value: {any: {constraints: [{gvk: {group: g, version: v1, kind: K}}, {package: {packageName: p, versionRange: '>>1'}}]}}\n",
			`dependencies[0] (olm.constraint): any.constraints[1].package: version: invalid semver range ">>1": Could not parse Range ">>1": Could not parse comparator ">>" in ">>1"`, nil, nil},
		{"constraint: empty compound", "dependencies:\n- type: olm.constraint\n  value: {all: {constraints: []}}\n", "dependencies[0] (olm.constraint): all.constraints: no constraints", nil, nil},
		{"constraint: rule not bool", "dependencies:\n- type: olm.constraint\n  value: {cel: {rule: '1 + 1'}}\n", "dependencies[0] (olm.constraint): cel.rule: cel expressions must have type Bool", nil, nil},
		{"constraint: rule empty", "dependencies:\n- type: olm.constraint\n  value: {not: {constraints: [{cel: {rule: ' '}}]}}\n", "dependencies[0] (olm.constraint): not.constraints[0].cel.rule: is empty", nil, nil},
		{"bad range", "dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: '>=>1'}\n", `dependencies[0] (olm.package): version: invalid semver range ">=>1": Could not parse Range ">=>1": Could not parse comparator ">=>" in ">=>1"`, nil, nil},
		{"missing range", "dependencies:\n- type: olm.package\n  value: {packageName: etcd}\n", "dependencies[0] (olm.package): version: a semver range is required", nil, nil},
		{"gvk without kind", "dependencies:\n- type: olm.gvk\n  value: {group: g, version: v1}\n", "dependencies[0] (olm.gvk): version and kind are required", nil, nil},
		{"no type", "dependencies:\n- value: {}\n", "dependencies[0].type is empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps, ignored, err := parseDependencies([]byte(tt.in))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			var got []string
			for _, d := range deps {
				got = append(got, d.String())
			}
			if err != nil || !slices.Equal(got, tt.deps) || !slices.Equal(ignored, tt.ignored) {
				t.Fatalf("got %q %q %v", got, ignored, err)
			}
		})
	}
}

func TestParseFBC(t *testing.T) {
	in := strings.Join([]string{
		"schema: olm.package\nname: p\n",
		"---\nschema: olm.bundle\npackage: p\nname: p.v1\nproperties:\n- type: olm.package\n  value: {packageName: p, version: 1.0.0}\n",
		"---\nnote: no schema\n",
		"---\nschema: olm.channel\npackage: ../p\nname: c\n",
		"---\nschema: example.com/custom\nanything: [1, 2]\n",
		"---\nschema: olm.bundle\n  bad: indent\n",
	}, "")
	blobs, errs := parseFBC([]byte(in))
	var schemas []string
	for _, b := range blobs {
		schemas = append(schemas, b.Schema+" "+b.Name)
	}
	if want := []string{"olm.package p", "olm.bundle p.v1"}; !slices.Equal(schemas, want) {
		t.Errorf("blobs %q, want %q", schemas, want)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	want := []string{
		"document at line 10: schema is missing",
		`document at line 12: package "../p": path escape: a name must not contain '/', '\' or be '..'`,
		"document at line 19: yaml: line 21: mapping values are not allowed in this context",
	}
	if !slices.Equal(msgs, want) {
		t.Errorf("errors:\n got %q\nwant %q", msgs, want)
	}
}

func TestBundleFromFBC(t *testing.T) {
	blob := func(props ...string) fbcBlob {
		return fbcBlob{Schema: SchemaBundle, Package: "p", Name: "p.v1", Properties: parseProps(t, props)}
	}
	pkg := `{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}`
	tests := []struct {
		name  string
		props []string
		err   string
	}{
		{"minimal", []string{pkg}, ""},
		{"no version", nil, "no olm.package property: the bundle's version is unknown"},
		{"bad version", []string{`{"type":"olm.package","value":{"packageName":"p","version":"v1"}}`}, `properties[0] (olm.package): version "v1" is not a semantic version: No Major.Minor.Patch elements found`},
		{"other package", []string{`{"type":"olm.package","value":{"packageName":"q","version":"1.0.0"}}`}, `properties[0] (olm.package): packageName "q" differs from the bundle's package "p"`},
		{"absolute ref", []string{pkg, `{"type":"olm.bundle.object","value":{"ref":"/etc/passwd"}}`}, `properties[1] (olm.bundle.object): ref "/etc/passwd": path escape: a referenced file must be inside the catalog root`},
		{"empty object", []string{pkg, `{"type":"olm.bundle.object","value":{}}`}, "properties[1] (olm.bundle.object): neither data nor ref is set"},
		{"bad required range", []string{pkg, `{"type":"olm.package.required","value":{"packageName":"q","versionRange":"~>x"}}`}, `properties[1] (olm.package.required): version: invalid semver range "~>x": Could not get version from string: "~>x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bundleFromFBC("cat/catalog.yaml", blob(tt.props...))
			if got := fmt.Sprint(err); (tt.err == "" && err != nil) || (tt.err != "" && got != tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func parseProps(t *testing.T, props []string) []fbcProperty {
	t.Helper()
	var out []fbcProperty
	for _, p := range props {
		blobs, errs := parseFBC([]byte(`{"schema":"olm.bundle","package":"p","name":"x","properties":[` + p + `]}`))
		if len(errs) > 0 || len(blobs) != 1 {
			t.Fatalf("bad test property %s: %v", p, errs)
		}
		out = append(out, blobs[0].Properties...)
	}
	return out
}

func TestSizeReason(t *testing.T) {
	if got, want := sizeReason(9<<20, 8<<20), "file is 9437184 bytes, over the size limit of 8388608 bytes (8 MiB)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := humanSize(1500), "1500 B"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseManifestMisleadingSniff(t *testing.T) {
	// A multi-line quoted scalar may continue at column 0 and look like a kind line.
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  note: \"first line\nkind: ClusterServiceVersion\"\n"
	if sniffKind([]byte(doc)) != "ConfigMap" {
		t.Fatal("the sniff reads the first kind line")
	}
	doc = "apiVersion: v1\nmetadata:\n  name: x\n  annotations:\n    note: \"a\nkind: ClusterServiceVersion\"\nkind: ConfigMap\n"
	if sniffKind([]byte(doc)) != "ClusterServiceVersion" {
		t.Fatal("test input no longer misleads the sniff")
	}
	m, err := parseManifest([]byte(doc))
	if err != nil || m.kind != "ConfigMap" || m.csv != nil {
		t.Errorf("got %+v, %v", m, err)
	}
	bc := &BundleContent{}
	if err := bc.add("x.yaml", document{data: []byte(doc), line: 1}); err != nil || len(bc.Objects) != 1 {
		t.Errorf("content: %v, %d objects", err, len(bc.Objects))
	}
}
