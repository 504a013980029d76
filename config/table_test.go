package config_test

import (
	"encoding/json"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

func rawTable(t *testing.T, path string) *metav1.Table {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	body, err := cs.Discovery().RESTClient().Get().AbsPath(path).SetHeader("Accept", tableAccept).DoRaw(ctx(t))
	if err != nil {
		t.Fatalf("GET %s as Table: %v", path, err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatal(err)
	}
	return table
}

// getTable returns column name -> printed cell for one object, all priorities (-o wide).
func getTable(t *testing.T, resource string) map[string]string {
	table := rawTable(t, "/apis/operators.coreos.com.operator-manager.domain/v1/namespaces/default/"+resource)
	if len(table.Rows) != 1 {
		t.Fatalf("%s: %d rows", resource, len(table.Rows))
	}
	out := map[string]string{}
	for i, c := range table.ColumnDefinitions {
		out[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	return out
}

func tableColumns(t *testing.T, kind string) []string {
	version := "v1"
	if kind == "clusterserviceversions" {
		version = "v1alpha1"
	}
	table := rawTable(t, "/apis/operators.coreos.com.operator-manager.domain/"+version+"/namespaces/default/"+kind)
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	return cols
}
