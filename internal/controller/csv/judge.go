package csv

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	omv1alpha1 "github.com/operator-manager/operator-manager/api/v1alpha1"
	"github.com/operator-manager/operator-manager/internal/health"
)

// judge derives the phase from the Deployments and their pods. Within the health gate a
// failure verdict (or the gate's timeout) fails the CSV and sticks until the gate starts
// again; after the gate the CSV is judged live: unhealthy is Failed ComponentUnhealthy,
// and healthy again is Succeeded again.
func (r *Reconciler) judge(ctx context.Context, s *scope) (bool, error) {
	csv := s.csv
	started := s.now
	if csv.Status.GateStartTime != nil {
		started = gateStart(csv.Status.GateStartTime.Time)
	}
	timeout := csv.HealthTimeout(DefaultHealthTimeout)
	var verdicts []health.Verdict
	serving := true // every Deployment serves and every APIService is Available
	for _, want := range s.deploys {
		in, err := r.healthInput(ctx, want, health.Input{Started: started, Timeout: timeout, Now: s.now})
		if err != nil {
			return true, err
		}
		if in == nil {
			verdicts = append(verdicts, health.Verdict{State: health.Progressing, Reason: health.ReasonDeploymentMissing,
				Message: fmt.Sprintf("deployment %s does not exist yet", want.Name)})
			serving = false
			continue
		}
		verdicts = append(verdicts, health.Deployment(*in))
		serving = serving && health.Serving(in.Deployment)
	}
	// Owned APIServices: read from the cache (they are watched, so an Available change
	// arrives as an event).
	for _, name := range s.apiServices {
		a := &apiregistrationv1.APIService{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, a); err != nil {
			if !apierrors.IsNotFound(err) {
				return true, err
			}
			a = nil
		}
		v := health.APIService(name, a)
		verdicts = append(verdicts, v)
		serving = serving && v.State == health.Healthy
	}
	v := health.Operator(verdicts)
	st := &csv.Status
	live := passedGate(st)
	switch {
	case v.State == health.Healthy:
		s.decide(omv1alpha1.CSVSucceeded, ReasonInstallSucceeded, "%s", v.Message)
		s.result = ctrl.Result{RequeueAfter: resyncAfterGate}
	case live && v.State == health.Progressing && serving:
		// The running version rolls its pods again (a `kubectl rollout restart`, a drift
		// repair) and they serve all along: no fault, so no ComponentUnhealthy and no
		// Ready=False blip on the Subscription. Its words stay (no status write for a
		// rollout of seconds); it is looked at again soon. A rollout that stalls ends in
		// the Deployment's progress deadline, a failure verdict, reported below.
		if st.Phase == omv1alpha1.CSVSucceeded {
			s.decide(st.Phase, st.Reason, "%s", st.Message)
		} else {
			s.decide(omv1alpha1.CSVSucceeded, ReasonInstallSucceeded, "serving while rolling out: %s", v.Message)
		}
		s.result = ctrl.Result{RequeueAfter: pollWhileInstalling}
	case live:
		// Not a version problem: reported, never rolled back. Deployment events bring it
		// back to Succeeded when it recovers; pods are looked at again meanwhile.
		s.decide(omv1alpha1.CSVFailed, ReasonComponentUnhealthy, "%s", v.Message)
		s.result = ctrl.Result{RequeueAfter: 10 * pollWhileInstalling}
	case st.Phase == omv1alpha1.CSVFailed && st.Reason != ReasonComponentUnhealthy:
		// A gate's verdict stays until the gate starts again (a new revision or config): a
		// failed version does not flap back to Installing and start a new timeout.
		s.decide(omv1alpha1.CSVFailed, st.Reason, "%s", st.Message)
		s.result = ctrl.Result{RequeueAfter: 10 * pollWhileInstalling}
	case v.State == health.Failed:
		s.decide(omv1alpha1.CSVFailed, v.Reason, "%s", v.Message)
		s.result = ctrl.Result{RequeueAfter: 10 * pollWhileInstalling}
	default:
		s.decide(omv1alpha1.CSVInstalling, ReasonInstalling, "%s", v.Message)
		s.result = ctrl.Result{RequeueAfter: lookAgainWhileInstalling(started, timeout, s.now)}
	}
	return true, nil
}

// gateStart is when a health gate's time counts from. Its start is stored to the second,
// truncated (metav1.Time), so the gate began within the second after the one read back:
// counted from that second's end, a timeout ends up to a second late, never early. The
// pass that starts the gate holds the exact time, and truncates it the same way.
func gateStart(stored time.Time) time.Time {
	return stored.Truncate(time.Second).Add(time.Second)
}

// lookAgainWhileInstalling is when a CSV in its health gate looks at its pods again:
// every pollWhileInstalling, and the moment its health timeout ends, so a version that
// never becomes healthy fails on time, not up to a poll later (the failed upgrade's
// rollback started 0 to 3 s after the timeout, by when the poll fell).
func lookAgainWhileInstalling(started time.Time, timeout time.Duration, now time.Time) time.Duration {
	if left := started.Add(timeout).Sub(now); left > 0 && left < pollWhileInstalling {
		return left
	}
	return pollWhileInstalling
}

// healthInput gathers one Deployment, its pods, its ReplicaSets and its current template
// hash (the pods and ReplicaSets only when the verdict needs them: health.NeedsPods) into
// timing, the gate's; nil when the Deployment does not exist.
func (r *Reconciler) healthInput(ctx context.Context, want *appsv1.Deployment, timing health.Input) (*health.Input, error) {
	// From the cache, unless it has not yet seen this process's last apply of the
	// Deployment: a copy older than that would report the previous template's replicas as
	// this version's, and is read fresh instead.
	d := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), d)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err != nil || !r.applied.covers(d) {
		d = &appsv1.Deployment{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), d); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
	}
	in := timing
	in.Deployment = d
	if !health.NeedsPods(in) {
		return &in, nil // wholly available, or not yet observed: judged from itself
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s: %w", d.Name, err)
	}
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	rss := &appsv1.ReplicaSetList{}
	if err := r.APIReader.List(ctx, rss, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	rev := d.Annotations["deployment.kubernetes.io/revision"]
	for _, rs := range rss.Items {
		if !metav1.IsControlledBy(&rs, d) {
			continue
		}
		in.ReplicaSets = append(in.ReplicaSets, rs)
		if rev != "" && rs.Annotations["deployment.kubernetes.io/revision"] == rev {
			in.CurrentHash = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	in.Pods = pods.Items
	return &in, nil
}
