package dao_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The program the replace test builds: what a tool reading the REST API
// or writing queue configurations does with the core's configs and dao
// packages (the k8shim's e2e framework does both).
const toolMain = `package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/apache/yunikorn-core/pkg/common/configs"
	"github.com/apache/yunikorn-core/pkg/webservice/dao"
	"go.yaml.in/yaml/v3"
)

func main() {
	conf, err := configs.LoadSchedulerConfigFromByteArray([]byte(configs.DefaultSchedulerConfig))
	if err != nil {
		fmt.Println("load:", err)
		os.Exit(1)
	}
	conf.Partitions[0].Queues[0].Queues = []configs.QueueConfig{{Name: "a",
		Resources: configs.Resources{Max: map[string]string{"memory": "1G"}}}}
	conf.Partitions[0].NodeSortPolicy = configs.NodeSortingPolicy{Type: "binpacking"}
	conf.Partitions[0].PlacementRules = append(conf.Partitions[0].PlacementRules, configs.PlacementRule{Name: "user"})
	text, err := yaml.Marshal(conf)
	if err != nil {
		fmt.Println("yaml:", err)
		os.Exit(1)
	}
	var parts []dao.PartitionInfo
	if err := json.Unmarshal([]byte(` + "`" + `[{"clusterId":"c","name":"default","totalNodes":2}]` + "`" + `), &parts); err != nil {
		fmt.Println("json:", err)
		os.Exit(1)
	}
	var q dao.PartitionQueueDAOInfo
	var app dao.ApplicationDAOInfo
	var node dao.NodeDAOInfo
	var health dao.SchedulerHealthDAOInfo
	var users []dao.UserResourceUsageDAOInfo
	var groups []dao.GroupResourceUsageDAOInfo
	var log dao.AllocationAskLogDAOInfo
	var cfg dao.ConfigDAOInfo
	e := dao.YAPIError{StatusCode: 400}
	v := dao.ValidateConfResponse{Allowed: true}
	_, _, _, _, _, _, _, _ = q, app, node, health, users, groups, log, cfg
	fmt.Printf("config %d bytes, partition %s with %d nodes, error %d, allowed %v\n",
		len(text), parts[0].Name, parts[0].TotalNodes, e.StatusCode, v.Allowed)
}
`

// TestOneReplaceLineForTools: a program written for yunikorn-core v1.8.0
// that imports its configs and dao packages (go.mod and go.sum tidied
// against the real module from the Go module proxy) builds on the drop-in
// after one added replace line, with -mod=readonly, and runs. The
// packages are pure Go: no cgo, no library to link.
func TestOneReplaceLineForTools(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	module, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(timeout time.Duration, env []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false"), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", toolMain)
	write("go.mod", "module example.com/tool\n\ngo 1.24.0\n\nrequire github.com/apache/yunikorn-core v1.8.0\n")
	run(5*time.Minute, []string{"GOFLAGS=-mod=mod"}, goTool, "mod", "tidy")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
	switched := string(mod) + "\nreplace github.com/apache/yunikorn-core => " + module + "\n"
	write("go.mod", switched)
	run(10*time.Minute, []string{"CGO_ENABLED=0"}, goTool, "build", "-mod=readonly", "-o", "tool", ".")
	run(10*time.Minute, []string{"CGO_ENABLED=0"}, goTool, "vet", "-mod=readonly", ".")
	if now, _ := os.ReadFile(filepath.Join(dir, "go.mod")); string(now) != switched {
		t.Errorf("go build changed go.mod:\n%s", now)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "go.sum")); !bytes.Equal(now, sum) {
		t.Errorf("go build changed go.sum")
	}
	out := run(time.Minute, nil, filepath.Join(dir, "tool"))
	if !strings.Contains(out, "partition default with 2 nodes, error 400, allowed true") {
		t.Errorf("the program's output:\n%s", out)
	}
}
