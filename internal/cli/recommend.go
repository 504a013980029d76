package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/blang/semver/v4"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1 "github.com/operator-manager/operator-manager/api/v1"
	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/controller/catalogsource"

	"github.com/operator-manager/operator-manager/internal/recommend"
	"github.com/operator-manager/operator-manager/internal/resolve"
)

// recommendation is `recommend -o json|yaml`.
type recommendation struct {
	Package     string   `json:"package"`
	Channel     string   `json:"channel"`
	KubeVersion string   `json:"kubeVersion"`
	Installed   string   `json:"installed,omitempty"`
	Recommended string   `json:"recommended,omitempty"`
	Version     string   `json:"version,omitempty"`
	Path        []string `json:"path,omitempty"`
	Installs    []string `json:"installs,omitempty"`
	// MetBy are the dependencies already met, each with the installation meeting it.
	MetBy      []string             `json:"metBy,omitempty"`
	PassedOver []resolve.PassedOver `json:"passedOver"`
	// Permissions is the RBAC the recommended version would be granted in this
	// namespace, before anything is created.
	Permissions []grant `json:"permissions,omitempty"`
}

func newRecommendCmd(g *globals) *cobra.Command {
	out := &output{}
	src := &catalogSource{g: g}
	var channel, kubeVersion string
	cmd := &cobra.Command{
		Use:   "recommend [DIR] PACKAGE",
		Short: "The best version of a package to install or upgrade to on this cluster, and why the newer ones are passed over",
		Long: `recommend walks the package's channel from its head down and picks the newest version
that fits this cluster: its minKubeVersion is met, its dependencies resolve against what
the namespace runs, and its CRDs pass the preflight against the live cluster (stored
versions kept, existing custom resources still valid). When the package is installed in
the namespace, only upgrades reachable by the channel's edges count. Every version passed
over is listed with its reason, and the RBAC the recommended version would be granted in
the namespace (its Roles and ClusterRoles, who they are bound to, and where) is listed
before anything is created.

Without DIR or a flag naming a catalog, the catalog is the cluster's, read as the manager
reads it: the installation's own CatalogSource when the package is installed in the
namespace, else the manager's default catalog (CatalogSource ` + config.ManagerNamespace + `/` + catalogsource.DefaultName + `).
--catalog names another CatalogSource of the cluster.`,
		Example: `  operator-manager recommend cache-operator -n team-a
  operator-manager recommend samples/catalog cache-operator
  operator-manager recommend --catalog community prometheus -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, ns, err := g.clientAndNamespace()
			if err != nil {
				return err
			}
			if len(args) == 1 && !src.hasSource() {
				key, err := clusterCatalogFor(ctx, c, ns, args[0])
				if err != nil {
					return err
				}
				if err := src.fromCluster(ctx, c, key); err != nil {
					return err
				}
			}
			cat, name, rest, err := src.load(ctx, args)
			if err != nil {
				return err
			}
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			kube, err := g.kubeVersion(kubeVersion)
			if err != nil {
				return err
			}
			res, err := recommend.Evaluate(ctx, recommend.Request{Client: c, Dynamic: dyn, Catalog: cat, CatalogName: name,
				Package: rest[0], Channel: channel, Namespace: ns, KubeVersion: kube,
				Note: func(note string) { fmt.Fprint(cmd.ErrOrStderr(), note) }})
			if err != nil {
				return err
			}
			rec, from := res.Recommendation, res.Installed
			doc := recommendation{Package: rest[0], Channel: rec.Channel, KubeVersion: kube.String(), Path: rec.Path, PassedOver: rec.PassedOver}
			if from != nil {
				doc.Installed = from.CSVName
			}
			if rec.Bundle != nil {
				doc.Recommended, doc.Version = rec.Bundle.CSVName, rec.Bundle.Version.String()
				doc.Permissions = res.Grants
				if rec.Plan != nil {
					for _, s := range rec.Plan.Install {
						doc.Installs = append(doc.Installs, s.CSVName+" ("+s.Reason+")")
					}
					for _, s := range rec.Plan.Satisfied {
						met := s.Requirement + " (required by " + s.RequiredBy + "): installed " + s.CSVName + resolve.ChangingNote(s.ChangingFrom)
						if s.ServedFrom != "" {
							met += ", run for this namespace by Subscription " + s.ServedFrom
						}
						doc.MetBy = append(doc.MetBy, met)
					}
				}
			}
			return out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) {
				switch {
				case doc.Recommended != "":
					fmt.Fprintf(tw, "Recommended:\t%s (%s) from channel %s, on Kubernetes %s\n", doc.Recommended, doc.Version, doc.Channel, doc.KubeVersion)
				case doc.Installed != "":
					fmt.Fprintf(tw, "Recommended:\tstay on %s: no upgrade fits\n", doc.Installed)
				}
				for _, d := range doc.Installs {
					fmt.Fprintf(tw, "With dependency:\t%s\n", d)
				}
				for _, d := range doc.MetBy {
					fmt.Fprintf(tw, "Dependency met:\t%s\n", d)
				}
				if len(doc.Permissions) > 0 {
					printGrants(tw, doc.Permissions)
				}
				if len(doc.PassedOver) > 0 {
					fmt.Fprintln(tw, "\nPASSED OVER\tVERSION\tREASON")
					for _, p := range doc.PassedOver {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", p.CSVName, p.Version, p.Reason)
					}
				}
			})
		},
	}
	src.inCluster = true
	src.bind(cmd, 2)
	cmd.Flags().StringVar(&channel, "channel", "", "the channel (default: the package's default channel)")
	cmd.Flags().StringVar(&kubeVersion, "kube-version", "", "judge for this Kubernetes version instead of the cluster's")
	out.bind(cmd)
	return cmd
}

// clusterCatalogFor is the CatalogSource recommend reads when no catalog is given: the one
// the package's installation in the namespace came from, else the manager's default.
func clusterCatalogFor(ctx context.Context, c client.Client, ns, pkg string) (types.NamespacedName, error) {
	var bps omv1.BlueprintList
	if err := c.List(ctx, &bps, client.InNamespace(ns)); err != nil {
		return types.NamespacedName{}, fmt.Errorf("listing the installations of namespace %s, to find the catalog of %s (or give the catalog as DIR or --catalog): %w", ns, pkg, err)
	}
	for _, bp := range bps.Items {
		if bp.Spec.Package == pkg && bp.Spec.Catalog != "" {
			return omv1.CatalogKey(bp.Spec.Catalog, ns), nil
		}
	}
	return types.NamespacedName{Namespace: config.ManagerNamespace, Name: catalogsource.DefaultName}, nil
}

// kubeVersion is the override, or the cluster's version from its /version.
func (g *globals) kubeVersion(override string) (semver.Version, error) {
	if override != "" {
		return semver.ParseTolerant(override)
	}
	cfg, err := g.restConfig()
	if err != nil {
		return semver.Version{}, err
	}
	return recommend.KubeVersion(cfg)
}
