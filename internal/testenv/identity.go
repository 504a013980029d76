package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/operator-manager/operator-manager/config"
	"github.com/operator-manager/operator-manager/internal/atomicfile"
)

// ManagerKubeconfigFile is the kubeconfig ManagerKubeconfig writes in the environment's
// directory: the manager's ServiceAccount token and nothing else.
const ManagerKubeconfigFile = "manager.kubeconfig"

// managerTokenLifetime is how long a token of ManagerKubeconfig lasts: longer than any test
// run or `dev up` session. The API server runs without --service-account-max-token-expiration,
// so it issues what is asked; ManagerKubeconfig fails if it ever shortens it.
const managerTokenLifetime = 48 * time.Hour

// ManagerUser is the user name the API server gives the manager's ServiceAccount.
const ManagerUser = "system:serviceaccount:" + config.ManagerNamespace + ":" + config.ManagerServiceAccount

// ManagerKubeconfig gives the manager its own identity, as the issue asks of every test and
// of `dev up`: as the admin it creates the manager's namespace, applies every object of
// config/rbac exactly as shipped (config.RBAC, server-side, field owner config.FieldOwner),
// waits until the bindings take effect, requests a token of the manager's ServiceAccount
// through the TokenRequest API, and writes <Dir>/manager.kubeconfig holding the cluster
// and only that bearer token (no client certificate), with the manager's namespace as the
// context namespace. It can be called again: it re-applies the RBAC and writes a fresh token.
func (e *Env) ManagerKubeconfig(ctx context.Context) (path string, err error) {
	objs, err := config.RBAC()
	if err != nil {
		return "", err
	}
	if !hasManagerServiceAccount(objs) {
		return "", fmt.Errorf("config/rbac does not define the ServiceAccount %s/%s", config.ManagerNamespace, config.ManagerServiceAccount)
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return "", err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: config.ManagerNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating namespace %s: %w", config.ManagerNamespace, err)
	}
	c, err := client.New(e.Config, client.Options{})
	if err != nil {
		return "", err
	}
	for _, obj := range objs {
		u := obj.DeepCopy()
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(config.FieldOwner), client.ForceOwnership); err != nil {
			return "", fmt.Errorf("applying %s %s of config/rbac: %w", obj.GetKind(), objectName(obj), err)
		}
	}
	if err := waitBindings(ctx, cs, objs); err != nil {
		return "", err
	}
	path = filepath.Join(e.Dir, ManagerKubeconfigFile)
	return path, e.TokenKubeconfig(ctx, config.ManagerNamespace, config.ManagerServiceAccount, path)
}

// TokenKubeconfig requests a token of a ServiceAccount through the TokenRequest API and
// writes a kubeconfig holding the cluster and only that bearer token (no client
// certificate), with the ServiceAccount's namespace as the context namespace.
func (e *Env) TokenKubeconfig(ctx context.Context, namespace, serviceAccount, path string) error {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(managerTokenLifetime / time.Second)),
		}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", namespace, serviceAccount, err)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left < managerTokenLifetime-10*time.Minute {
		return fmt.Errorf("the API server issued a token of ServiceAccount %s/%s valid for %s, not %s (--service-account-max-token-expiration?)",
			namespace, serviceAccount, left.Round(time.Second), managerTokenLifetime)
	}
	caData := e.Config.CAData
	if len(caData) == 0 && e.Config.CAFile != "" {
		if caData, err = os.ReadFile(e.Config.CAFile); err != nil {
			return err
		}
	}
	if len(caData) == 0 {
		return errors.New("the admin configuration has no CA data")
	}
	const cluster = "operator-manager-local"
	user := serviceAccount
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: e.Server, CertificateAuthorityData: caData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = user
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	// Written whole and renamed, so a reader never sees half a file.
	return atomicfile.Write(path, data, 0o600)
}

// ManagerConfig is ManagerKubeconfig for a manager run in the test process: a client
// configuration with only the manager's ServiceAccount token.
func (e *Env) ManagerConfig(ctx context.Context) (*rest.Config, error) {
	path, err := e.ManagerKubeconfig(ctx)
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 200, 400
	return rc, nil
}

func hasManagerServiceAccount(objs []*unstructured.Unstructured) bool {
	for _, u := range objs {
		if u.GetAPIVersion() == "v1" && u.GetKind() == "ServiceAccount" &&
			u.GetNamespace() == config.ManagerNamespace && u.GetName() == config.ManagerServiceAccount {
			return true
		}
	}
	return false
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// waitBindings waits until the API server's RBAC authorizer applies each binding of objs
// that names the manager's ServiceAccount: a SubjectAccessReview for the first resource
// rule of the bound role, asked as that ServiceAccount, is allowed. Without it the first
// requests of a manager started at once could be denied.
func waitBindings(ctx context.Context, cs kubernetes.Interface, objs []*unstructured.Unstructured) error {
	roles := map[string]*unstructured.Unstructured{} // "Kind namespace/name"
	for _, u := range objs {
		if u.GetKind() == "ClusterRole" || u.GetKind() == "Role" {
			roles[u.GetKind()+" "+objectName(u)] = u
		}
	}
	for _, u := range objs {
		if u.GetAPIVersion() != rbacv1.SchemeGroupVersion.String() || (u.GetKind() != "ClusterRoleBinding" && u.GetKind() != "RoleBinding") {
			continue
		}
		var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields, without a namespace
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
			return fmt.Errorf("decoding %s %s of config/rbac: %w", u.GetKind(), objectName(u), err)
		}
		if !bindsManager(b.Subjects) {
			continue
		}
		roleKey := b.RoleRef.Kind + " " + b.RoleRef.Name
		if b.RoleRef.Kind == "Role" {
			roleKey = "Role " + b.Namespace + "/" + b.RoleRef.Name
		}
		role, ok := roles[roleKey]
		if !ok {
			continue // a role config/rbac does not define: nothing to compare with
		}
		var r rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, &r); err != nil {
			return fmt.Errorf("decoding %s of config/rbac: %w", roleKey, err)
		}
		attrs := firstResourceRule(r.Rules, b.Namespace)
		if attrs == nil {
			continue
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               ManagerUser,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + config.ManagerNamespace, "system:authenticated"},
			ResourceAttributes: attrs,
		}}
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			last = got.Status.Reason
			return got.Status.Allowed, nil
		})
		if err != nil {
			return fmt.Errorf("%s %s of config/rbac not in effect: %s %s/%s in %q still denied to %s (%s): %w",
				u.GetKind(), objectName(u), attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace, ManagerUser, last, err)
		}
	}
	return nil
}

func bindsManager(subjects []rbacv1.Subject) bool {
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind && s.Name == config.ManagerServiceAccount && s.Namespace == config.ManagerNamespace {
			return true
		}
	}
	return false
}

// firstResourceRule is a request the first resource rule of rules allows, in namespace.
func firstResourceRule(rules []rbacv1.PolicyRule, namespace string) *authorizationv1.ResourceAttributes {
	for _, r := range rules {
		if len(r.Verbs) == 0 || len(r.APIGroups) == 0 || len(r.Resources) == 0 {
			continue
		}
		resource, sub, _ := strings.Cut(r.Resources[0], "/")
		if resource == "*" && sub != "" {
			continue // "*/scale" and the like: no single request stands for it
		}
		attrs := &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: resource, Subresource: sub,
		}
		if len(r.ResourceNames) > 0 {
			attrs.Name = r.ResourceNames[0]
		}
		return attrs
	}
	return nil
}

// RestartAPIServer stops kube-apiserver (SIGTERM, then waits for it to exit), leaves it
// down for down, and starts it again with the same binary, arguments and port, then waits
// until it serves. etcd and the other components keep running and must reconnect on their
// own; the log of the new process is appended to the old one. The environment's state file
// records the new process.
func (e *Env) RestartAPIServer(ctx context.Context, down time.Duration) error {
	i := -1
	for j, p := range e.Processes {
		if p.Name == binAPIServer {
			i = j
		}
	}
	if i < 0 {
		return errors.New("no kube-apiserver in this environment")
	}
	old := e.Processes[i]
	if old.Bin == "" || len(old.Args) == 0 {
		return fmt.Errorf("kube-apiserver (pid %d) was started without recording its arguments (an older operator-manager); start the environment afresh", old.PID)
	}
	before, err := e.servedResources()
	if err != nil {
		return fmt.Errorf("listing what kube-apiserver serves before its restart: %w", err)
	}
	c, err := client.New(e.Config, client.Options{})
	if err != nil {
		return err
	}
	// The shipped admission policy adds the manager's finalizer to Subscriptions; after a
	// restart the API server refuses their creates with 503 until it has the kind's schema
	// again (2 to 3 s; docs/design-notes.md), which the test after the restart met.
	admitted, _ := config.AdmissionAddsFinalizer(ctx, c)
	old.stop(60 * time.Second)
	if done, _ := old.exited(); !done {
		return fmt.Errorf("kube-apiserver (pid %d) did not exit", old.PID)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	if f, err := os.OpenFile(old.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(f, "\n--- operator-manager testenv: kube-apiserver restarted at %s after %s down ---\n\n", time.Now().Format(time.RFC3339), down)
		f.Close()
	}
	p, err := spawn(e.Dir, old.Name, old.Bin, old.Detached, os.O_APPEND, old.Args...)
	if err != nil {
		return err
	}
	e.Processes[i] = p
	if err := e.saveState(); err != nil {
		return err
	}
	if err := e.waitServing(ctx, 90*time.Second); err != nil {
		return err
	}
	if err := e.waitServingAgain(ctx, before, 90*time.Second); err != nil {
		return err
	}
	if !admitted {
		return nil
	}
	return poll(ctx, 90*time.Second, "kube-apiserver to add the finalizer to a dry-run Subscription again", e, func(ctx context.Context) (bool, error) {
		ok, err := config.AdmissionAddsFinalizer(ctx, c)
		return err == nil && ok, nil
	})
}
