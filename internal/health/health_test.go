package health

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func dep(replicas, updated, available, total int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "op", Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: total, UpdatedReplicas: updated,
			AvailableReplicas: available, Conditions: conds},
	}
}

var availableTrue = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}

func pod(name, hash string, statuses ...corev1.ContainerStatus) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}},
		Spec:       corev1.PodSpec{NodeName: "node"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: statuses,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [manager]"}}},
	}
}

func waiting(reason string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "manager", RestartCount: restarts, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "back-off"}}}
}

// pulling is a pod of hash whose container manager, of image, waits with reason (an
// image pull problem or InvalidImageName).
func pulling(name, hash, image, reason string) corev1.Pod {
	p := pod(name, hash, corev1.ContainerStatus{Name: "manager", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: reason, Message: `Back-off pulling image "` + image + `"`}}})
	p.Spec.Containers = []corev1.Container{{Name: "manager", Image: image}}
	return p
}

// unscheduled is a pending pod the scheduler found no node for.
func unscheduled(name, hash string) corev1.Pod {
	p := pod(name, hash)
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}}
	return p
}

const forbidden = `pods "op-2-" is forbidden: no PriorityClass with name foo was found`

// rs is a ReplicaSet of hash and revision, failing to create pods with message when it
// is not empty.
func rs(name, hash, revision, message string) appsv1.ReplicaSet {
	r := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash},
		Annotations: map[string]string{"deployment.kubernetes.io/revision": revision}}}
	if message != "" {
		r.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: message}}
	}
	return r
}

var (
	replicaFailureTrue = appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: forbidden}
	deadlineExceeded   = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "op-2" has timed out progressing.`}
)

// within and after are a rollout's times inside and past a one minute timeout.
func within(in Input) Input {
	in.Started, in.Timeout, in.Now = t0, time.Minute, t0.Add(30*time.Second)
	return in
}
func after(in Input) Input {
	in.Started, in.Timeout, in.Now = t0, time.Minute, t0.Add(time.Minute)
	return in
}

func TestDeployment(t *testing.T) {
	cases := []struct {
		name   string
		in     Input
		state  State
		reason string
		msg    []string
	}{
		{"available", Input{Deployment: dep(2, 2, 2, 2, availableTrue), Now: t0}, Healthy, ReasonAvailable, []string{"2/2 replicas updated and available"}},
		{"old replicas remain", Input{Deployment: dep(2, 2, 2, 3, availableTrue), Now: t0}, Progressing, ReasonRollingOut, []string{"2/2 replicas updated"}},
		{"rolling out", Input{Deployment: dep(2, 1, 1, 2), Started: t0, Timeout: time.Minute, Now: t0.Add(30 * time.Second)}, Progressing, ReasonRollingOut, []string{"1/2 replicas updated, 1 available, 1 old replica still running"}},
		{"rolling out, the old pods serving", Input{Deployment: dep(3, 3, 2, 5), Started: t0, Timeout: time.Minute, Now: t0.Add(30 * time.Second)}, Progressing, ReasonRollingOut, []string{"3/3 replicas updated, 2 available, 2 old replicas still running"}},
		{"rollout just started names no pods", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1")}, Started: t0, Timeout: 5 * time.Minute, Now: t0.Add(10 * time.Second)},
			Progressing, ReasonRollingOut, []string{"1/1 replicas updated, 0 available", "!pod op-1-a"}},
		{"slow rollout names the pods not ready", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1")}, Started: t0, Timeout: 5 * time.Minute, Now: t0.Add(31 * time.Second)},
			Progressing, ReasonRollingOut, []string{"1/1 replicas updated, 0 available; pod op-1-a not ready (ContainersNotReady"}},
		{"generation not observed", Input{Deployment: func() *appsv1.Deployment { d := dep(1, 1, 1, 1, availableTrue); d.Generation = 3; return d }(), Now: t0},
			Progressing, ReasonNotObserved, []string{"generation 3"}},
		{"progress deadline", Input{Deployment: dep(1, 1, 0, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
			Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "op-1" has timed out progressing.`}), Pods: []corev1.Pod{pod("op-1-a", "1")}, Now: t0},
			Failed, ReasonProgressDeadline, []string{"deployment op exceeded its progress deadline", `ReplicaSet "op-1"`, "pod op-1-a not ready (ContainersNotReady"}},
		{"crash loop", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1", waiting("CrashLoopBackOff", 5))}, Now: t0},
			Failed, ReasonCrashLoop, []string{"pod op-1-a container manager is CrashLoopBackOff (restarted 5 times)"}},
		{"restarts without waiting", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1", corev1.ContainerStatus{Name: "manager", RestartCount: 4})}, Now: t0},
			Failed, ReasonCrashLoop, []string{"restarted 4 times and is not ready"}},
		{"old template crash ignored", Input{Deployment: dep(1, 1, 0, 2), CurrentHash: "2", Pods: []corev1.Pod{pod("op-1-a", "1", waiting("CrashLoopBackOff", 5))}, Now: t0},
			Progressing, ReasonRollingOut, nil},
		{"timeout", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1")}, Started: t0, Timeout: time.Minute, Now: t0.Add(time.Minute)},
			Failed, ReasonTimeout, []string{"not available within 1m0s", "1/1 replicas updated, 0 available", "pod op-1-a not ready"}},
		{"available just at timeout", Input{Deployment: dep(1, 1, 1, 1, availableTrue), Started: t0, Timeout: time.Minute, Now: t0.Add(2 * time.Minute)},
			Healthy, ReasonAvailable, nil},

		// Image pull problems heal when the registry does: waited on, named, and named
		// again when the timeout fails the rollout.
		{"image pull back-off within gate", within(Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff")}}),
			Progressing, ReasonImagePullBackOff, []string{`deployment op: pod op-1-a container manager: ImagePullBackOff: image "quay.io/x/y:1.0": Back-off pulling image "quay.io/x/y:1.0"`}},
		{"err image pull within gate", within(Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y:1.0", "ErrImagePull")}}),
			Progressing, ReasonImagePullBackOff, []string{`pod op-1-a container manager: ErrImagePull: image "quay.io/x/y:1.0"`}},
		{"image pull without timeout", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff")}, Now: t0},
			Progressing, ReasonImagePullBackOff, []string{`image "quay.io/x/y:1.0"`}},
		{"image from container status", within(Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{func() corev1.Pod {
			p := pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff")
			p.Spec.Containers = nil
			p.Status.ContainerStatuses[0].Image = "quay.io/x/z:2.0"
			return p
		}()}}), Progressing, ReasonImagePullBackOff, []string{`image "quay.io/x/z:2.0"`}},
		{"init container image pull", within(Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{func() corev1.Pod {
			p := pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff")
			p.Spec.InitContainers, p.Spec.Containers = p.Spec.Containers, nil
			p.Status.InitContainerStatuses, p.Status.ContainerStatuses = p.Status.ContainerStatuses, nil
			return p
		}()}}), Progressing, ReasonImagePullBackOff, []string{`container manager: ImagePullBackOff: image "quay.io/x/y:1.0"`}},
		{"image pull after timeout", after(Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff")}}),
			Failed, ReasonTimeout, []string{"deployment op not available within 1m0s", `pod op-1-a container manager: ImagePullBackOff: image "quay.io/x/y:1.0": Back-off pulling`, "!no pod problems seen"}},
		{"old template image pull ignored", within(Input{Deployment: dep(1, 1, 0, 2), CurrentHash: "2", Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff")}}),
			Progressing, ReasonRollingOut, nil},
		{"invalid image name fails at once", within(Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y::1.0", "InvalidImageName")}}),
			Failed, ReasonCrashLoop, []string{"pod op-1-a container manager is InvalidImageName"}},
		{"crash loop beats image pull", within(Input{Deployment: dep(2, 2, 0, 2), Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff"), pod("op-1-b", "1", waiting("CrashLoopBackOff", 5))}}),
			Failed, ReasonCrashLoop, []string{"pod op-1-b container manager is CrashLoopBackOff"}},
		{"available despite a pulling surge pod", Input{Deployment: dep(1, 1, 1, 1, availableTrue), Pods: []corev1.Pod{pulling("op-1-a", "1", "quay.io/x/y:1.0", "ImagePullBackOff")}, Now: t0},
			Healthy, ReasonAvailable, nil},

		// A ReplicaSet that cannot create pods leaves no pod to show a problem: its
		// condition says why.
		{"replica set failed create within gate", within(Input{Deployment: dep(1, 0, 0, 0), ReplicaSets: []appsv1.ReplicaSet{rs("op-2", "2", "2", forbidden)}}),
			Progressing, ReasonReplicaFailure, []string{"deployment op: replica set op-2 cannot create pods: FailedCreate: " + forbidden}},
		{"replica set failed create after timeout", after(Input{Deployment: dep(1, 0, 0, 0), ReplicaSets: []appsv1.ReplicaSet{rs("op-2", "2", "2", forbidden)}}),
			Failed, ReasonTimeout, []string{"deployment op not available within 1m0s: 0/1 replicas updated, 0 available",
				"replica set op-2 cannot create pods: FailedCreate: " + forbidden, "no pods exist for 1 wanted replicas", "!no pod problems seen"}},
		{"newest replica set by revision", within(Input{Deployment: dep(1, 0, 0, 0), ReplicaSets: []appsv1.ReplicaSet{
			rs("op-9", "9", "9", "old failure"), rs("op-10", "10", "10", forbidden), rs("op-1", "1", "1", "older failure")}}),
			Progressing, ReasonReplicaFailure, []string{"replica set op-10 cannot create pods", "!old"}},
		{"newest replica set by hash", within(Input{Deployment: dep(1, 0, 0, 0), CurrentHash: "1", ReplicaSets: []appsv1.ReplicaSet{
			rs("op-2", "2", "2", "other failure"), rs("op-1", "1", "1", forbidden)}}),
			Progressing, ReasonReplicaFailure, []string{"replica set op-1 cannot create pods: FailedCreate: " + forbidden}},
		{"old replica set failure ignored", within(Input{Deployment: dep(1, 0, 0, 1), CurrentHash: "2", ReplicaSets: []appsv1.ReplicaSet{
			rs("op-1", "1", "1", forbidden), rs("op-2", "2", "2", "")}}),
			Progressing, ReasonRollingOut, nil},
		{"deployment replica failure", within(Input{Deployment: dep(1, 0, 0, 0, replicaFailureTrue)}),
			Progressing, ReasonReplicaFailure, []string{"deployment op: cannot create pods: FailedCreate: " + forbidden}},
		{"replica set failure named over the deployment's", within(Input{Deployment: dep(1, 0, 0, 0, replicaFailureTrue), ReplicaSets: []appsv1.ReplicaSet{rs("op-2", "2", "2", forbidden)}}),
			Progressing, ReasonReplicaFailure, []string{"replica set op-2 cannot create pods"}},
		{"image pull named before replica failure", within(Input{Deployment: dep(2, 1, 0, 1), ReplicaSets: []appsv1.ReplicaSet{rs("op-2", "2", "2", forbidden)},
			Pods: []corev1.Pod{pulling("op-2-a", "2", "quay.io/x/y:1.0", "ImagePullBackOff")}}),
			Progressing, ReasonImagePullBackOff, []string{`image "quay.io/x/y:1.0"`}},
		{"available despite a replica failure", Input{Deployment: dep(1, 1, 1, 1, availableTrue), ReplicaSets: []appsv1.ReplicaSet{rs("op-2", "2", "2", forbidden)}, Now: t0},
			Healthy, ReasonAvailable, nil},

		// No pods at all is a problem to name, not "no pod problems".
		{"no pods within gate", within(Input{Deployment: dep(2, 0, 0, 0)}), Progressing, ReasonRollingOut, []string{"0/2 replicas updated"}},
		{"no pods after timeout", after(Input{Deployment: dep(2, 0, 0, 0)}),
			Failed, ReasonTimeout, []string{"no pods exist for 2 wanted replicas", "!no pod problems seen"}},
		{"only terminating pods after timeout", after(Input{Deployment: dep(1, 0, 0, 0), Pods: []corev1.Pod{func() corev1.Pod {
			p := pod("op-1-a", "1")
			p.DeletionTimestamp = &metav1.Time{Time: t0}
			return p
		}()}}), Failed, ReasonTimeout, []string{"no pods exist for 1 wanted replicas", "!op-1-a"}},
		{"scaled to zero", Input{Deployment: dep(0, 0, 0, 0, availableTrue), Now: t0}, Healthy, ReasonAvailable, nil},
		{"unscheduled after timeout", after(Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{unscheduled("op-1-a", "1")}}),
			Failed, ReasonTimeout, []string{"pod op-1-a not scheduled (Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.)"}},
		{"pod problems bounded", after(Input{Deployment: dep(4, 4, 0, 4), Pods: []corev1.Pod{pod("op-1-d", "1"), pod("op-1-c", "1"), pod("op-1-b", "1"), pod("op-1-a", "1")}}),
			Failed, ReasonTimeout, []string{"pod op-1-a not ready", "pod op-1-c not ready", "!op-1-d"}},

		// The deployment controller's deadline stays fatal, with what is known of why.
		{"progress deadline with replica set failure", Input{Deployment: dep(1, 0, 0, 0, deadlineExceeded), ReplicaSets: []appsv1.ReplicaSet{rs("op-2", "2", "2", forbidden)}, Now: t0},
			Failed, ReasonProgressDeadline, []string{"deployment op exceeded its progress deadline", `ReplicaSet "op-2" has timed out`,
				"replica set op-2 cannot create pods: FailedCreate: " + forbidden, "no pods exist for 1 wanted replicas"}},
		{"progress deadline with image pull", Input{Deployment: dep(1, 1, 0, 1, deadlineExceeded), Pods: []corev1.Pod{pulling("op-2-a", "2", "quay.io/x/y:1.0", "ErrImagePull")}, Now: t0},
			Failed, ReasonProgressDeadline, []string{`pod op-2-a container manager: ErrImagePull: image "quay.io/x/y:1.0"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Deployment(tc.in)
			if v.State != tc.state || v.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", v.State, v.Reason, v.Message, tc.state, tc.reason)
			}
			// A "!" before a text means that the message must not contain it.
			for _, m := range tc.msg {
				if absent, ok := strings.CutPrefix(m, "!"); ok {
					if strings.Contains(v.Message, absent) {
						t.Errorf("message has %q: %s", absent, v.Message)
					}
				} else if !strings.Contains(v.Message, m) {
					t.Errorf("message lacks %q: %s", m, v.Message)
				}
			}
		})
	}
}

// TestTimeoutMessageOrder checks that the timeout names the most specific problem first:
// an image pull, then a replica failure, then pods not scheduled, then pods not ready.
func TestTimeoutMessageOrder(t *testing.T) {
	v := Deployment(after(Input{Deployment: dep(3, 2, 0, 2), CurrentHash: "2",
		ReplicaSets: []appsv1.ReplicaSet{rs("op-2", "2", "2", forbidden)},
		Pods:        []corev1.Pod{pod("op-2-a", "2"), unscheduled("op-2-b", "2"), pulling("op-2-c", "2", "quay.io/x/y:1.0", "ImagePullBackOff")}}))
	if v.State != Failed || v.Reason != ReasonTimeout {
		t.Fatalf("got %s/%s (%s), want %s/%s", v.State, v.Reason, v.Message, Failed, ReasonTimeout)
	}
	last := -1
	for _, m := range []string{`ImagePullBackOff: image "quay.io/x/y:1.0"`, "replica set op-2 cannot create pods", "pod op-2-b not scheduled", "pod op-2-a not ready"} {
		i := strings.Index(v.Message, m)
		if i <= last {
			t.Errorf("%q missing or out of order in: %s", m, v.Message)
		}
		last = i
	}
}

func TestOperator(t *testing.T) {
	h := Verdict{Healthy, ReasonAvailable, "a"}
	p := Verdict{Progressing, ReasonRollingOut, "b"}
	f := Verdict{Failed, ReasonCrashLoop, "c"}
	for _, tc := range []struct {
		in   []Verdict
		want State
	}{
		{nil, Healthy}, {[]Verdict{h, h}, Healthy}, {[]Verdict{h, p}, Progressing}, {[]Verdict{p, f, h}, Failed},
	} {
		if got := Operator(tc.in); got.State != tc.want {
			t.Errorf("Operator(%v) = %s, want %s", tc.in, got.State, tc.want)
		}
	}
}

func TestAPIService(t *testing.T) {
	cond := func(status apiregistrationv1.ConditionStatus, reason, msg string) *apiregistrationv1.APIService {
		return &apiregistrationv1.APIService{Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{
			{Type: apiregistrationv1.Available, Status: status, Reason: reason, Message: msg}}}}
	}
	for _, tc := range []struct {
		name   string
		in     *apiregistrationv1.APIService
		state  State
		reason string
		msg    string
	}{
		{"missing", nil, Progressing, ReasonAPIServiceMissing, "APIService v1.x.example does not exist yet"},
		{"not checked yet", &apiregistrationv1.APIService{}, Progressing, ReasonAPIServiceUnavailable, "the aggregator has not checked it"},
		{"unavailable", cond(apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck", "x509: certificate signed by unknown authority"),
			Progressing, ReasonAPIServiceUnavailable, "APIService v1.x.example is not available: FailedDiscoveryCheck: x509: certificate signed by unknown authority"},
		{"available", cond(apiregistrationv1.ConditionTrue, "Passed", "all checks passed"), Healthy, ReasonAPIServiceAvailable, "APIService v1.x.example is available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := APIService("v1.x.example", tc.in)
			if v.State != tc.state || v.Reason != tc.reason || !strings.Contains(v.Message, tc.msg) {
				t.Errorf("verdict = %+v, want %s %s containing %q", v, tc.state, tc.reason, tc.msg)
			}
		})
	}
	// Combined with Deployments: healthy only when both are, and the message counts each.
	dep := Verdict{Healthy, ReasonAvailable, "deployment a available"}
	if v := Operator([]Verdict{dep, APIService("v1.x.example", cond(apiregistrationv1.ConditionTrue, "Passed", ""))}); v.State != Healthy ||
		v.Message != "1 deployment available, 1 APIService available" {
		t.Errorf("operator verdict = %+v", v)
	}
	if v := Operator([]Verdict{dep, APIService("v1.x.example", nil)}); v.State != Progressing || !strings.Contains(v.Message, "does not exist yet") {
		t.Errorf("operator verdict with a missing APIService = %+v", v)
	}
}

// TestNeedsPods: a Deployment its controller reports wholly rolled out and available is
// judged without its pods, and judged Healthy from itself; one whose generation the
// controller has not observed yet is judged without them too, and waits, until its gate's
// time is up, when the timeout's message names what the pods show.
func TestNeedsPods(t *testing.T) {
	unobserved := dep(1, 1, 1, 1, availableTrue)
	unobserved.Generation = 3
	crashing := []corev1.Pod{pod("op-1", "h", waiting("CrashLoopBackOff", 5))}
	for _, tc := range []struct {
		name    string
		d       *appsv1.Deployment
		elapsed time.Duration // since the gate started; its timeout is a minute
		want    bool
	}{
		{"available", dep(2, 2, 2, 2, availableTrue), 0, false},
		{"available without the condition", dep(2, 2, 2, 2), 0, true},
		{"one replica not available", dep(2, 2, 1, 2, availableTrue), 0, true},
		{"not all updated", dep(2, 1, 2, 2, availableTrue), 0, true},
		{"old replicas remain", dep(2, 2, 2, 3, availableTrue), 0, true},
		{"generation not observed", unobserved, 10 * time.Second, false},
		{"generation not observed past the timeout", unobserved, time.Minute, true},
		{"progress deadline exceeded", dep(1, 1, 1, 1, availableTrue, deadlineExceeded), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Deployment: tc.d, Started: t0, Timeout: time.Minute, Now: t0.Add(tc.elapsed)}
			if got := NeedsPods(in); got != tc.want {
				t.Fatalf("NeedsPods = %v, want %v", got, tc.want)
			}
			if tc.want {
				return
			}
			without := Deployment(in)
			if tc.d.Status.ObservedGeneration >= tc.d.Generation {
				if without.State != Healthy {
					t.Errorf("judged without pods: %+v, want Healthy", without)
				}
				return
			}
			// Not observed: what the pods would show does not change the verdict.
			in.Pods, in.CurrentHash = crashing, "h"
			if with := Deployment(in); with != without || without.Reason != ReasonNotObserved {
				t.Errorf("judged without pods: %+v; with them: %+v; want both %s", without, with, ReasonNotObserved)
			}
		})
	}
}

// TestServing: a Deployment serves while the deployment controller counts it Available
// with a pod available, however far its rollout is; scaled to nothing available, or not
// Available, it does not.
func TestServing(t *testing.T) {
	availableFalse := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse}
	notObserved := dep(1, 1, 1, 1, availableTrue)
	notObserved.Generation = 3
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"rolled out", dep(1, 1, 1, 1, availableTrue), true},
		{"restart rolling: the old pod serves", dep(1, 1, 1, 2, availableTrue, replicaFailureTrue), true},
		{"a new generation not observed yet", notObserved, true},
		{"Available but no pod available", dep(1, 0, 0, 1, availableTrue), false},
		{"not Available", dep(2, 2, 1, 2, availableFalse), false},
		{"no conditions yet", dep(1, 0, 0, 0), false},
		{"past its progress deadline, still available", dep(1, 0, 1, 2, availableTrue, deadlineExceeded), true},
	} {
		if got := Serving(tc.d); got != tc.want {
			t.Errorf("%s: Serving = %v, want %v", tc.name, got, tc.want)
		}
	}
}
