package cli

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/operator-manager/operator-manager/internal/imagecatalog"
)

func newCatalogPushCmd() *cobra.Command {
	out := &output{}
	var insecure bool
	cmd := &cobra.Command{
		Use:   "push DIR REF",
		Short: "Publish a catalog directory as a File-Based Catalog image and one bundle image per version",
		Long: `push loads the catalog in DIR (any layout) and pushes it to a registry as images:

  - each bundle as an OLM registry+v1 bundle image (manifests/ and metadata/), to
    REPOSITORY/<package> by digest, also tagged with its version;
  - a File-Based Catalog image (/configs, label
    operators.operatorframework.io.index.configs.v1) whose bundles name those images by
    digest, to REF (REGISTRY/REPOSITORY[:TAG]).

Every image is reproducible: pushing the same directory again gives the same digests.
Credentials come from the Docker config (~/.docker/config.json, $DOCKER_CONFIG) and its
credential helpers. A catalog with rejected bundles is refused (see "catalog validate").

Progress goes to stderr; stdout gets each bundle and its image, and the catalog image by
digest.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("operator-manager")}
			if insecure {
				t := remote.DefaultTransport.(*http.Transport).Clone()
				t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure asks for it
				opts = append(opts, remote.WithTransport(t))
			}
			progress := cmd.ErrOrStderr()
			p := &imagecatalog.Publisher{
				Remote:   opts,
				Insecure: insecure,
				Progress: func(e imagecatalog.Event) {
					if e.Kind == "catalog" {
						fmt.Fprintf(progress, "pushed catalog %s\n", e.Ref)
						return
					}
					fmt.Fprintf(progress, "pushed bundle %s %s: %s\n", e.Package, e.Version, e.Ref)
				},
			}
			pub, err := p.Publish(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), pub, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "PACKAGE\tVERSION\tBUNDLE IMAGE")
				for _, b := range pub.Bundles {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Package, b.Version, b.Image)
				}
				fmt.Fprintf(tw, "\nCatalog: %s (tagged %s)\n", pub.Catalog, pub.Tag)
			})
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "allow plain HTTP and unverified TLS to the registry")
	out.bind(cmd)
	return cmd
}
