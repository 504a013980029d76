// Package identity gives the controllers a client that acts as the installing identity of
// an installation: a ServiceAccount of the installation's namespace, impersonated (as
// Flux's serviceAccountName and OLM's OperatorGroup service account do), or the manager
// itself. Every object an installation creates, changes or deletes goes through it, so the
// API server's own permission and escalation rules judge each write.
package identity

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Identity is who installs: a ServiceAccount (Namespace/Name), or the manager when Name is
// empty.
type Identity struct {
	Namespace string
	Name      string
}

// Manager is the manager's own identity.
var Manager = Identity{}

// IsManager reports whether the manager installs as itself.
func (i Identity) IsManager() bool { return i.Name == "" }

// Username is the user the API server sees for a ServiceAccount, or "" for the manager.
func (i Identity) Username() string {
	if i.IsManager() {
		return ""
	}
	return serviceaccount.MakeUsername(i.Namespace, i.Name)
}

// Groups are the groups the API server gives a ServiceAccount's tokens.
func (i Identity) Groups() []string {
	if i.IsManager() {
		return nil
	}
	return append(serviceaccount.MakeGroupNames(i.Namespace), "system:authenticated")
}

// String names the identity for messages.
func (i Identity) String() string {
	if i.IsManager() {
		return "the manager's own ServiceAccount"
	}
	return fmt.Sprintf("ServiceAccount %s/%s", i.Namespace, i.Name)
}

// Effective is the identity of an installation in namespace: the ServiceAccount it names,
// else the manager's default (--default-service-account), else the manager itself.
func Effective(namespace, named, defaultName string) Identity {
	if named == "" {
		named = defaultName
	}
	if named == "" {
		return Manager
	}
	return Identity{Namespace: namespace, Name: named}
}

// Clients hands out one client per identity. The manager's own is the manager's client;
// impersonating clients talk to the API server directly (their reads are rare: writes and
// the CRD preflight), and are kept, since each holds its own transport.
type Clients struct {
	// Own is the manager's client, used for the manager's identity.
	Own client.Client
	// OwnReader reads as the manager without a cache, so reading an installed object of
	// any kind never starts an informer for that kind.
	OwnReader client.Reader
	// Config is the manager's REST configuration, copied and given an impersonation
	// header for ServiceAccounts.
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper

	mu      sync.Mutex
	cache   map[Identity]client.Client
	dynamic map[Identity]dynamic.Interface
}

// Dynamic returns a dynamic client that acts as id, for listing resources by their
// group, version and plural name without REST mapping (the CRD preflight).
func (c *Clients) Dynamic(id Identity) (dynamic.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.dynamic[id]; ok {
		return d, nil
	}
	cfg := rest.CopyConfig(c.Config)
	if !id.IsManager() {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: id.Username()}
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client for %s: %w", id, err)
	}
	if c.dynamic == nil {
		c.dynamic = map[Identity]dynamic.Interface{}
	}
	c.dynamic[id] = d
	return d, nil
}

// Reader returns an uncached reader that reads as id.
func (c *Clients) Reader(id Identity) (client.Reader, error) {
	if id.IsManager() {
		return c.OwnReader, nil
	}
	return c.For(id)
}

// For returns the client that acts as id.
func (c *Clients) For(id Identity) (client.Client, error) {
	if id.IsManager() {
		return c.Own, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.cache[id]; ok {
		return cl, nil
	}
	cfg := rest.CopyConfig(c.Config)
	// Only the user: the API server adds a ServiceAccount's groups itself, and naming them
	// would need the right to impersonate groups as well.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: id.Username()}
	cl, err := client.New(cfg, client.Options{Scheme: c.Scheme, Mapper: c.Mapper})
	if err != nil {
		return nil, fmt.Errorf("creating a client impersonating %s: %w", id, err)
	}
	if c.cache == nil {
		c.cache = map[Identity]client.Client{}
	}
	c.cache[id] = cl
	return cl, nil
}
