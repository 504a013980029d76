package health

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		{"rolling out", Input{Deployment: dep(2, 1, 1, 2), Started: t0, Timeout: time.Minute, Now: t0.Add(30 * time.Second)}, Progressing, ReasonRollingOut, []string{"1/2 replicas updated, 1 available"}},
		{"generation not observed", Input{Deployment: func() *appsv1.Deployment { d := dep(1, 1, 1, 1, availableTrue); d.Generation = 3; return d }(), Now: t0},
			Progressing, ReasonNotObserved, []string{"generation 3"}},
		{"progress deadline", Input{Deployment: dep(1, 1, 0, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
			Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "op-1" has timed out progressing.`}), Pods: []corev1.Pod{pod("op-1-a", "1")}, Now: t0},
			Failed, ReasonProgressDeadline, []string{"deployment op exceeded its progress deadline", `ReplicaSet "op-1"`, "pod op-1-a not ready (ContainersNotReady"}},
		{"crash loop", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1", waiting("CrashLoopBackOff", 5))}, Now: t0},
			Failed, ReasonCrashLoop, []string{"pod op-1-a container manager is CrashLoopBackOff (restarted 5 times)"}},
		{"image pull", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1", waiting("ImagePullBackOff", 0))}, Now: t0},
			Failed, ReasonCrashLoop, []string{"ImagePullBackOff"}},
		{"restarts without waiting", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1", corev1.ContainerStatus{Name: "manager", RestartCount: 4})}, Now: t0},
			Failed, ReasonCrashLoop, []string{"restarted 4 times and is not ready"}},
		{"old template crash ignored", Input{Deployment: dep(1, 1, 0, 2), CurrentHash: "2", Pods: []corev1.Pod{pod("op-1-a", "1", waiting("CrashLoopBackOff", 5))}, Now: t0},
			Progressing, ReasonRollingOut, nil},
		{"timeout", Input{Deployment: dep(1, 1, 0, 1), Pods: []corev1.Pod{pod("op-1-a", "1")}, Started: t0, Timeout: time.Minute, Now: t0.Add(time.Minute)},
			Failed, ReasonTimeout, []string{"not available within 1m0s", "1/1 replicas updated, 0 available", "pod op-1-a not ready"}},
		{"available just at timeout", Input{Deployment: dep(1, 1, 1, 1, availableTrue), Started: t0, Timeout: time.Minute, Now: t0.Add(2 * time.Minute)},
			Healthy, ReasonAvailable, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Deployment(tc.in)
			if v.State != tc.state || v.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", v.State, v.Reason, v.Message, tc.state, tc.reason)
			}
			for _, m := range tc.msg {
				if !strings.Contains(v.Message, m) {
					t.Errorf("message lacks %q: %s", m, v.Message)
				}
			}
		})
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
