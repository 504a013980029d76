package testenv

import (
	"os"
	"path/filepath"
)

// StageLabel on a pod (set in a Deployment's pod template) picks one of the project's
// failure stages below instead of kwok's pod-ready stage. This is how tests make a
// version of an operator unhealthy for real: the Deployment controller sees its pods and
// reports the Deployment unavailable, exactly as with a broken image.
const StageLabel = "kwok.operator-manager.domain/stage"

// Values of StageLabel.
const (
	// StageNeverReady: containers run but never pass readiness.
	StageNeverReady = "never-ready"
	// StageCrashLoop: containers crash and wait in CrashLoopBackOff.
	StageCrashLoop = "crash-loop"
)

// projectStages outweigh kwok's pod-ready stage (weight 0) for pods that carry StageLabel,
// because kwok chooses among matching stages by weight.
const projectStages = `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: operator-manager-pod-never-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.labels["` + StageLabel + `"]'
      operator: In
      values: ["` + StageNeverReady + `"]
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ["Pending"]
  weight: 10000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        message: "readiness probe failed"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: operator-manager-pod-crash-loop
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.labels["` + StageLabel + `"]'
      operator: In
      values: ["` + StageCrashLoop + `"]
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ["Pending"]
  weight: 10000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: false
        restartCount: 5
        lastState:
          terminated:
            exitCode: 1
            reason: Error
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: "back-off restarting failed container"
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

func writeProjectStages(dir string) (string, error) {
	path := filepath.Join(dir, "project-stages.yaml")
	return path, os.WriteFile(path, []byte(projectStages), 0o644)
}
