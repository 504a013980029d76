package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blang/semver/v4"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/internal/access"
	"github.com/operator-manager/operator-manager/internal/catalog"
	"github.com/operator-manager/operator-manager/internal/crdsafety"
	"github.com/operator-manager/operator-manager/internal/migration"
	"github.com/operator-manager/operator-manager/internal/nativeapi"
	"github.com/operator-manager/operator-manager/internal/operatorgroup"
	"github.com/operator-manager/operator-manager/internal/revisionstore"
	"github.com/operator-manager/operator-manager/internal/scheme"
)

// export and import move installations between clusters through one archive
// (internal/migration). Import pins each installation to the exported bundle: it creates
// the Blueprint at that CSV and stores the bundles of the retained revisions in the
// cluster (the revision store), so the manager installs from them without a catalog.

func newExportCmd(g *globals) *cobra.Command {
	var file string
	var all bool
	out := &output{}
	cmd := &cobra.Command{
		Use:   "export (-n NAMESPACE | -A) -f ARCHIVE",
		Short: "Write the installations of a namespace (or all) and their retained bundles to one archive, for import elsewhere",
		Long: `export writes each Subscription that runs a version (its spec as written: channel,
approval, health and rollback policy, config, service account), the version it runs,
its dependencies, and the bundles of its retained revisions (read from the cluster) to
one gzip-compressed archive. "operator-manager import" recreates them on another cluster
from the archive alone. Subscriptions that run nothing yet are skipped, named on stderr.`,
		Example: `  operator-manager export -n team-a -f team-a.tgz
  operator-manager export -A -f cluster.tgz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError("give the archive to write with -f FILE (- for standard output)")
			}
			if file == "-" && out.structured() {
				return usageError("-o prints a summary on standard output, which -f - fills with the archive: give -f FILE")
			}
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			if all {
				ns = ""
			}
			a, skipped, err := exportInstallations(cmd.Context(), c, ns)
			if err != nil {
				return err
			}
			a.Source = cfg.Host
			for _, s := range skipped {
				fmt.Fprintln(cmd.ErrOrStderr(), "skipped", s)
			}
			if len(a.Installations) == 0 {
				// An archive of nothing is written by a mistyped namespace as often as on
				// purpose: say so rather than leave an empty file to import.
				where := "namespace " + ns
				if ns == "" {
					where = "the cluster"
				}
				return fmt.Errorf("nothing to export: %s has no installation to export (see `operator-manager list`); no archive written", where)
			}
			if skipped == nil {
				skipped = []string{}
			}
			w := cmd.OutOrStdout()
			if file != "-" {
				f, err := os.Create(file)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			if err := migration.Write(w, a); err != nil {
				return fmt.Errorf("writing %s: %w", file, err)
			}
			if file == "-" {
				return nil
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d installation(s) and %d bundle(s) to %s\n", len(a.Installations), len(a.Bundles), file)
			if !out.structured() {
				return nil
			}
			var names []string
			for _, in := range a.Installations {
				names = append(names, in.Key()+" "+in.CSV)
			}
			return out.print(cmd.OutOrStdout(), map[string]any{"file": file, "installations": names, "bundles": len(a.Bundles), "skipped": skipped}, nil)
		},
	}
	out.bind(cmd)
	cmd.Flags().StringVarP(&file, "file", "f", "", "the archive to write (- for standard output)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "export every namespace")
	return cmd
}

// exportInstallations reads every Subscription of ns ("" for all) that runs a version.
func exportInstallations(ctx context.Context, c client.Client, ns string) (*migration.Archive, []string, error) {
	subs := &omv1.SubscriptionList{}
	if err := c.List(ctx, subs, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	a := &migration.Archive{ExportedAt: time.Now().UTC().Truncate(time.Second), Bundles: map[string][]catalog.File{}, Installations: []migration.Installation{}}
	var skipped []string
	store := &revisionstore.Store{Client: c}
	pkgOf := map[string]string{} // namespace/package -> Subscription name
	for _, s := range subs.Items {
		if s.Status.Package != "" {
			pkgOf[s.Namespace+"/"+s.Status.Package] = s.Name
		}
	}
	for i := range subs.Items {
		s := &subs.Items[i]
		key := s.Namespace + "/" + s.Name
		if s.Spec.Option == omv1.OptionDelete || !s.DeletionTimestamp.IsZero() {
			skipped = append(skipped, key+": being uninstalled")
			continue
		}
		bp := &omv1.Blueprint{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), bp); err != nil || bp.Status.CurrentCSV == "" {
			skipped = append(skipped, key+": runs no version yet")
			continue
		}
		// What its namespace's OperatorGroup gives it (targets, who installs) is written
		// into the exported spec: the archive alone recreates what ran, on a cluster
		// without that OperatorGroup too.
		if err := operatorgroup.ApplyFrom(ctx, c, s); err != nil {
			if _, unusable := operatorgroup.Unusable(err); !unusable {
				return nil, nil, err
			}
			skipped = append(skipped, key+": "+err.Error())
			continue
		}
		in := migration.Installation{Namespace: s.Namespace, Name: s.Name, Labels: s.Labels, Annotations: exportedAnnotations(s.Annotations),
			Spec: s.Spec, Package: bp.Spec.Package, CSV: bp.Status.CurrentCSV, Version: bp.Status.CurrentVersion,
			Catalog: bp.Spec.Catalog, Dependencies: bp.Spec.Dependencies}
		for _, d := range bp.Spec.Dependencies {
			if name, ok := pkgOf[s.Namespace+"/"+d.Package]; ok && name != s.Name {
				in.DependsOn = append(in.DependsOn, name)
			}
		}
		seen := map[string]bool{}
		for _, h := range bp.Status.History {
			if h.Outcome != omv1.OutcomeSucceeded || h.BundleDigest == "" {
				continue
			}
			if h.CSVName == in.CSV {
				in.BundleDigest = h.BundleDigest // the newest good revision of what runs
			}
			if seen[h.BundleDigest] {
				continue
			}
			files, err := store.Load(ctx, s.Namespace, bp.Name, h.BundleDigest)
			if err != nil {
				if h.CSVName == in.CSV {
					return nil, nil, fmt.Errorf("%s runs %s, whose bundle the cluster does not give: %w", key, h.CSVName, err)
				}
				continue // pruned meanwhile: the archive keeps what is there
			}
			seen[h.BundleDigest] = true
			a.Bundles[h.BundleDigest] = files
			in.Revisions = append(in.Revisions, migration.Revision{Revision: h.Revision, CSV: h.CSVName, Version: h.Version, BundleDigest: h.BundleDigest,
				Trigger: h.Trigger, FromVersion: h.FromVersion, StartTime: timeOf(h.StartTime), EndTime: timeOf(h.EndTime), Message: h.Message})
		}
		if in.BundleDigest == "" || !seen[in.BundleDigest] {
			return nil, nil, fmt.Errorf("%s runs %s, but no retained revision of it succeeded with a stored bundle", key, in.CSV)
		}
		a.Installations = append(a.Installations, in)
	}
	// A dependency skipped (running nothing) is not a dependency to wait for.
	kept := map[string]bool{}
	for _, in := range a.Installations {
		kept[in.Key()] = true
	}
	for i := range a.Installations {
		in := &a.Installations[i]
		var deps []string
		for _, d := range in.DependsOn {
			if kept[in.Namespace+"/"+d] {
				deps = append(deps, d)
			}
		}
		in.DependsOn = deps
	}
	return a, skipped, nil
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// importedHistory is the imported-history annotation of the Blueprint import makes: the
// installation's retained revisions as they ran on the cluster it was exported from.
func importedHistory(in *migration.Installation) (string, error) {
	revs := make([]omv1.Revision, 0, len(in.Revisions))
	for _, r := range in.Revisions {
		rev := omv1.Revision{Revision: r.Revision, Trigger: r.Trigger, FromVersion: r.FromVersion, CSVName: r.CSV, Version: r.Version,
			BundleDigest: r.BundleDigest, Outcome: omv1.OutcomeSucceeded, Reason: "Succeeded", Message: r.Message, Imported: true}
		if r.StartTime != nil {
			rev.StartTime = &metav1.Time{Time: *r.StartTime}
		}
		if r.EndTime != nil {
			rev.EndTime = &metav1.Time{Time: *r.EndTime}
		}
		revs = append(revs, rev)
	}
	data, err := json.Marshal(revs)
	return string(data), err
}

// exportedAnnotations drops what the API server and kubectl keep for themselves.
func exportedAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if k == corev1.LastAppliedConfigAnnotation {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// importRow is one installation of `import`'s report.
type importRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Package   string `json:"package"`
	Version   string `json:"version"`
	// Action is create, unchanged, or pin (the Subscription exists and runs another
	// version: its Blueprint is pointed at the archive's).
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// importDoc is `import -o json|yaml`.
type importDoc struct {
	DryRun        bool        `json:"dryRun"`
	Changed       bool        `json:"changed"`
	Installations []importRow `json:"installations"`
	// Problems are why an installation cannot run on this cluster; any of them stops the
	// import before anything is applied.
	Problems []string `json:"problems,omitempty"`
}

func newImportCmd(g *globals) *cobra.Command {
	out := &output{}
	var file string
	var dryRun, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "import -f ARCHIVE [--dry-run] [--wait]",
		Short: "Recreate the installations of an export archive on this cluster, from the archive alone",
		Long: `import reads an archive "operator-manager export" wrote, checks every installation against
this cluster first (minKubeVersion, the native APIs it needs, a CRD another package owns,
a Subscription of that name for another package, a dependency neither in the archive nor
installed here, a ServiceAccount it installs as that this cluster lacks) and applies
nothing when one cannot run.
Then, in dependency order, it creates each installation pinned to the exported version:
its Subscription as exported, its Blueprint at that CSV, and the bundles of its retained
revisions stored in the cluster, so the manager installs without any catalog. With --wait
each passes its health gate before the next starts. An installation already running the
archive's version is left alone, so a second import changes nothing; --dry-run only
prints the plan.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError("give the archive to read with -f FILE (- for standard input)")
			}
			var r io.Reader = cmd.InOrStdin()
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			a, err := migration.Read(r, file)
			if err != nil {
				return err
			}
			order, err := a.Ordered()
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			kube, err := g.kubeVersion("")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			doc := importDoc{DryRun: dryRun, Installations: []importRow{}}
			if doc.Problems, err = importRights(ctx, c, order); err != nil {
				return err
			}
			for _, in := range order {
				row, problems, err := planImport(ctx, c, kube, a, in)
				if err != nil {
					return err
				}
				doc.Installations = append(doc.Installations, row)
				doc.Problems = append(doc.Problems, problems...)
				doc.Changed = doc.Changed || row.Action != "unchanged"
			}
			w := out.human(cmd)
			if len(doc.Problems) > 0 || dryRun {
				if err := out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) { printImport(tw, doc) }); err != nil {
					return err
				}
				if len(doc.Problems) > 0 {
					return silentError{fmt.Errorf("%d installation(s) cannot run on this cluster; nothing was applied", len(doc.Problems))}
				}
				return nil
			}
			for i, in := range order {
				row := doc.Installations[i]
				if row.Action == "unchanged" {
					continue
				}
				fmt.Fprintf(w, "%s %s/%s: %s %s\n", row.Action, in.Namespace, in.Name, in.CSV, row.Detail)
				if err := applyImport(ctx, c, a, in); err != nil {
					return fmt.Errorf("importing %s: %w", in.Key(), err)
				}
				if wait {
					if err := waitBlueprint(ctx, c, client.ObjectKey{Namespace: in.Namespace, Name: in.Name}, in.CSV, timeout, w); err != nil {
						return fmt.Errorf("importing %s: %w", in.Key(), err)
					}
				}
			}
			if !doc.Changed {
				fmt.Fprintln(w, "no change: every installation already runs the archive's version")
			}
			return out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) { printImport(tw, doc) })
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the archive to read (- for standard input)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check and print the plan; change nothing")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for each installation to pass its health gate before the next, printing progress")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits for each installation")
	out.bind(cmd)
	return cmd
}

func printImport(tw *tabwriter.Writer, doc importDoc) {
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tPACKAGE\tVERSION\tACTION\tDETAIL")
	for _, r := range doc.Installations {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Namespace, r.Name, r.Package, r.Version, r.Action, r.Detail)
	}
	for _, p := range doc.Problems {
		fmt.Fprintf(tw, "cannot run here: %s\n", p)
	}
	if doc.DryRun {
		fmt.Fprintln(tw, "(dry run: nothing was changed)")
	}
}

// planImport decides what import does with one installation and what keeps it from
// running on this cluster.
func planImport(ctx context.Context, c client.Client, kube semver.Version, a *migration.Archive, in *migration.Installation) (importRow, []string, error) {
	row := importRow{Namespace: in.Namespace, Name: in.Name, Package: in.Package, Version: in.Version, Action: "create"}
	var problems []string
	content, err := catalog.ContentFromFiles(a.Bundles[in.BundleDigest])
	if err != nil {
		return row, nil, fmt.Errorf("%s: the bundle of %s: %w", in.Key(), in.CSV, err)
	}
	if min := content.CSV.Spec.MinKubeVersion; min != "" && !kube.Equals(semver.Version{}) {
		if v, err := semver.ParseTolerant(min); err == nil && v.GT(kube) {
			problems = append(problems, fmt.Sprintf("%s: %s needs Kubernetes %s or newer, this cluster runs %s", in.Key(), in.CSV, v, kube))
		}
	}
	if missing, err := nativeapi.Missing(c.RESTMapper(), content.CSV.Spec.NativeAPIs); err != nil {
		return row, nil, err
	} else if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%s: %s needs APIs this cluster does not serve: %s", in.Key(), in.CSV, strings.Join(missing, "; ")))
	}
	for _, u := range content.CRDs {
		live := &apiextensionsv1.CustomResourceDefinition{}
		err := c.Get(ctx, client.ObjectKey{Name: u.GetName()}, live)
		if apierrors.IsForbidden(err) {
			// A person who may not read CRDs cannot tell whose they are: said in the plan,
			// not a reason to refuse what they may otherwise import.
			row.Detail = "CRDs not checked for another package's: you may not read them"
			break
		}
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return row, nil, err
		}
		if owner := live.Annotations[crdsafety.PackageAnnotation]; owner != "" && owner != in.Package {
			problems = append(problems, fmt.Sprintf("%s: CRD %s exists here, installed by package %s, not %s", in.Key(), u.GetName(), owner, in.Package))
		}
	}
	for _, d := range in.Dependencies {
		met, err := dependencyMet(ctx, c, a, in, d)
		if err != nil {
			return row, nil, err
		}
		if !met {
			where := ""
			if d.ServedFrom != "" {
				where = ", met by " + d.ServedFrom + " where it was exported,"
			}
			problems = append(problems, fmt.Sprintf("%s: %s depends on package %s%s which is neither in the archive nor installed here: export it too (export -A), or install it here first",
				in.Key(), in.CSV, d.Package, where))
		}
	}
	if sa := in.Spec.ServiceAccountName; sa != "" {
		// It installed as a tenant's ServiceAccount, which an archive does not carry (who
		// may do what in a namespace is the cluster's administrators' to say). Without it
		// the installation would wait, Blocked, after everything else was applied.
		err := c.Get(ctx, client.ObjectKey{Namespace: in.Namespace, Name: sa}, &corev1.ServiceAccount{})
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("%s: it installs as ServiceAccount %s/%s (spec.serviceAccountName), which this cluster does not have: create it (and the namespace), grant it what it installed with, and import again",
				in.Key(), in.Namespace, sa))
		case err != nil && !apierrors.IsForbidden(err):
			return row, nil, err
		}
	}
	sub := &omv1.Subscription{}
	err = c.Get(ctx, client.ObjectKey{Namespace: in.Namespace, Name: in.Name}, sub)
	switch {
	case apierrors.IsNotFound(err):
		return row, problems, nil
	case err != nil:
		return row, nil, err
	}
	if sub.Status.Package != "" && sub.Status.Package != in.Package {
		problems = append(problems, fmt.Sprintf("%s: a Subscription of that name exists here for package %s", in.Key(), sub.Status.Package))
		return row, problems, nil
	}
	bp := &omv1.Blueprint{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: in.Namespace, Name: in.Name}, bp); err != nil && !apierrors.IsNotFound(err) {
		return row, nil, err
	}
	switch {
	case bp.Spec.ClusterServiceVersionName == in.CSV && bp.Status.CurrentCSV == in.CSV:
		row.Action, row.Detail = "unchanged", "runs "+in.CSV
	case bp.Name == "":
		row.Action, row.Detail = "pin", "the Subscription exists and runs nothing yet"
	default:
		row.Action, row.Detail = "pin", fmt.Sprintf("runs %s now", bp.Status.CurrentCSV)
	}
	return row, problems, nil
}

// importRights says what the importing person may not do that the import needs, per
// namespace of the archive: create its namespace (when missing), create and patch
// Blueprints, create Secrets (the stored bundles) and Subscriptions. Asked of the API
// server first (SelfSubjectAccessReview), so a person short of one right gets nothing
// half applied (a Blueprint waiting for a Subscription never made).
func importRights(ctx context.Context, c client.Client, order []*migration.Installation) ([]string, error) {
	var problems []string
	seen := map[string]bool{}
	for _, in := range order {
		if seen[in.Namespace] {
			continue
		}
		seen[in.Namespace] = true
		group := omv1.GroupVersion.Group
		checks := []access.Request{
			{Namespace: in.Namespace, Verb: "create", Group: group, Resource: "blueprints"},
			{Namespace: in.Namespace, Verb: "patch", Group: group, Resource: "blueprints"},
			{Namespace: in.Namespace, Verb: "create", Resource: "secrets"},
			{Namespace: in.Namespace, Verb: "create", Group: group, Resource: "subscriptions"},
		}
		if err := c.Get(ctx, client.ObjectKey{Name: in.Namespace}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			checks = append(checks, access.Request{Verb: "create", Resource: "namespaces", Name: in.Namespace})
		}
		missing, err := access.SelfMissing(ctx, c, checks)
		if err != nil {
			return nil, err
		}
		var refused []string
		for _, r := range missing {
			refused = append(refused, r.Action())
		}
		if len(refused) > 0 {
			problems = append(problems, fmt.Sprintf("namespace %s: you may not %s, which import needs (the namespace if missing, the Blueprint, the stored bundles as Secrets, the Subscription); nothing was applied",
				in.Namespace, strings.Join(refused, ", ")))
		}
	}
	return problems, nil
}

// dependencyMet says whether a dependency of an imported installation will be there: an
// installation of the archive meets it (the one of another namespace that met it where it
// was exported, or one of its package in the same namespace), or the cluster has one.
// Without it the operator would be installed without what it needs.
func dependencyMet(ctx context.Context, c client.Client, a *migration.Archive, in *migration.Installation, d omv1.ResolvedDependency) (bool, error) {
	for _, other := range a.Installations {
		if (d.ServedFrom != "" && other.Key() == d.ServedFrom) || (d.ServedFrom == "" && other.Namespace == in.Namespace && other.Package == d.Package) {
			return true, nil
		}
	}
	if d.ServedFrom != "" {
		ns, name, _ := strings.Cut(d.ServedFrom, "/")
		switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &omv1.Subscription{}); {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil && !apierrors.IsForbidden(err):
			return false, err
		}
		return true, nil // there, or not the importer's to see: the manager tells then
	}
	subs := &omv1.SubscriptionList{}
	if err := c.List(ctx, subs, client.InNamespace(in.Namespace)); apierrors.IsForbidden(err) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	for _, s := range subs.Items {
		if s.Status.Package == d.Package || s.Spec.PackageName() == d.Package {
			return true, nil
		}
	}
	return false, nil
}

// applyImport creates (or pins) one installation: the namespace, the Blueprint at the
// archive's CSV before the Subscription (so the Subscription finds its plan made and
// does not resolve its own from a catalog), the bundles of its retained revisions in the
// revision store, then the Subscription, which then owns the Blueprint.
func applyImport(ctx context.Context, c client.Client, a *migration.Archive, in *migration.Installation) error {
	// Read first: a person who may not create namespaces may import into one that exists.
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.Namespace}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(nsObj), &corev1.Namespace{}); apierrors.IsNotFound(err) {
		if err := c.Create(ctx, nsObj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	key := client.ObjectKey{Namespace: in.Namespace, Name: in.Name}
	sub := &omv1.Subscription{}
	subErr := c.Get(ctx, key, sub)
	if subErr != nil && !apierrors.IsNotFound(subErr) {
		return subErr
	}
	// A new Subscription has generation 1: the Blueprint says it was written for it.
	generation := int64(1)
	if subErr == nil {
		generation = sub.Generation
	}
	bp := &omv1.Blueprint{}
	bpErr := c.Get(ctx, key, bp)
	switch {
	case apierrors.IsNotFound(bpErr):
		history, err := importedHistory(in)
		if err != nil {
			return err
		}
		bp = &omv1.Blueprint{ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name,
			Labels: map[string]string{omv1.LabelSubscription: in.Name, omv1.LabelPackage: in.Package},
			Annotations: map[string]string{omv1.AnnotationSubscriptionGeneration: strconv.FormatInt(generation, 10),
				omv1.AnnotationSubscriptionIntent: in.Spec.VersionIntent(), omv1.AnnotationImportedHistory: history}},
			Spec: omv1.BlueprintSpec{ClusterServiceVersionName: in.CSV, Version: in.Version, Package: in.Package, Catalog: in.Catalog,
				BundleDigest: in.BundleDigest, Generation: 1, Approved: true, Dependencies: in.Dependencies}}
		if err := c.Create(ctx, bp); err != nil {
			return err
		}
	case bpErr != nil:
		return bpErr
	default:
		// Pinned as a person pins it by hand (as `rollback` does): a version change.
		patch := client.MergeFrom(bp.DeepCopy())
		bp.Spec.OldVersion = bp.Status.CurrentCSV
		bp.Spec.ClusterServiceVersionName, bp.Spec.Version, bp.Spec.BundleDigest = in.CSV, in.Version, in.BundleDigest
		bp.Spec.Generation++
		bp.Spec.Approved = true
		if err := c.Patch(ctx, bp, patch); err != nil {
			return err
		}
	}
	store := &revisionstore.Store{Client: c}
	digests := []string{in.BundleDigest}
	for _, r := range in.Revisions {
		digests = append(digests, r.BundleDigest)
	}
	sort.Strings(digests)
	for i, d := range digests {
		if i > 0 && digests[i-1] == d {
			continue
		}
		if err := store.Save(ctx, bp, d, a.Bundles[d]); err != nil {
			return fmt.Errorf("storing bundle %s: %w", d, err)
		}
	}
	if apierrors.IsNotFound(subErr) {
		sub = &omv1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name, Labels: in.Labels, Annotations: in.Annotations},
			Spec: in.Spec}
		if err := c.Create(ctx, sub); err != nil {
			return err
		}
		if sub.Generation != generation {
			return fmt.Errorf("the new Subscription has generation %d, not %d", sub.Generation, generation)
		}
	}
	// Owned by its Subscription, as the manager makes it: deleted with it, and its
	// progress mirrored into it.
	patch := client.MergeFrom(bp.DeepCopy())
	if err := controllerutil.SetControllerReference(sub, bp, scheme.Scheme); err != nil {
		var already *controllerutil.AlreadyOwnedError
		if errors.As(err, &already) {
			return nil
		}
		return err
	}
	return c.Patch(ctx, bp, patch)
}
