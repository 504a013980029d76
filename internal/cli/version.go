package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/operator-manager/operator-manager/config"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of operator-manager",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			version := "(devel)"
			if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
				version = info.Main.Version
			}
			fmt.Fprintln(cmd.OutOrStdout(), "operator-manager", version)
		},
	}
}

func newCRDsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "crds", Short: "Manage operator-manager's own CRDs"}
	cmd.AddCommand(&cobra.Command{
		Use:   "install",
		Short: "Install or update the CRDs (server-side apply) and wait until they are Established",
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
			crds, _ := config.CRDs()
			for _, crd := range crds {
				fmt.Fprintf(cmd.OutOrStdout(), "customresourcedefinition/%s established\n", crd.Name)
			}
			return nil
		},
	})
	return cmd
}
