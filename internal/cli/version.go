package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/operator-manager/operator-manager/config"
)

// versionDoc is `version -o json|yaml`.
type versionDoc struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Revision  string `json:"revision,omitempty"`
}

func newVersionCmd() *cobra.Command {
	out := &output{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of operator-manager",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc := versionDoc{Version: "(devel)", GoVersion: runtime.Version()}
			if info, ok := debug.ReadBuildInfo(); ok {
				if info.Main.Version != "" {
					doc.Version = info.Main.Version
				}
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" {
						doc.Revision = s.Value
					}
				}
			}
			return out.print(cmd.OutOrStdout(), doc, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "operator-manager", doc.Version)
			})
		},
	}
	out.bind(cmd)
	return cmd
}

func newCRDsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "crds", Short: "Manage operator-manager's own CRDs"}
	out := &output{}
	install := &cobra.Command{
		Use:   "install",
		Short: "Install or update the CRDs (server-side apply), wait until they are Established, and apply config/admission",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if err := config.InstallCRDs(ctx, c); err != nil {
				return err
			}
			policies, err := config.InstallAdmission(ctx, c)
			if err != nil {
				return err
			}
			crds, _ := config.CRDs()
			var names []string
			for _, crd := range crds {
				names = append(names, crd.Name)
			}
			return out.print(cmd.OutOrStdout(), map[string]any{"established": names, "admission": policies}, func(tw *tabwriter.Writer) {
				for _, n := range names {
					fmt.Fprintf(tw, "customresourcedefinition/%s established\n", n)
				}
				for _, p := range policies {
					fmt.Fprintf(tw, "%s applied\n", p)
				}
				if len(policies) == 0 {
					fmt.Fprintln(tw, "admission policies not served by this API server (before Kubernetes 1.36): skipped; the manager adds the Subscription finalizer itself")
				}
			})
		},
	}
	out.bind(install)
	cmd.AddCommand(install)
	return cmd
}
