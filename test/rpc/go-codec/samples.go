package main

import (
	"strings"
	"time"
)

var (
	startedAt   = time.Date(2023, 7, 1, 12, 34, 56, 123456789, time.UTC)
	finishedAt  = time.Date(2023, 7, 1, 7, 0, 0, 5000, time.FixedZone("", -7*3600))
	indiaTime   = time.Date(2024, 2, 29, 23, 59, 59, 0, time.FixedZone("IST", 5*3600+30*60))
	lmtTime     = time.Date(1890, 1, 1, 0, 0, 0, 0, time.FixedZone("LMT", 3600+15*60+7)) // offset with seconds: binary version 2
	nodeEventAt = time.Date(2023, 7, 1, 12, 0, 0, 0, time.UTC)
)

func healthy() *bool { b := true; return &b }

// Unix nanosecond times (~1.7e18) exceed 2^53: JS reads them as the nearest
// double. Samples compared byte for byte use times a double holds exactly.
const (
	submitNs = 1688214896123456768
	eventNs  = 1688214896123457024
)

func sampleJob() *Job {
	return &Job{
		ID: "example", Name: "example", Type: "batch", Priority: 50,
		Datacenters: []string{"dc1"},
		ParameterizedJob: &ParameterizedJobConfig{
			Payload: "optional", MetaRequired: []string{"who"},
		},
		Payload: []byte{0x00, 0xff, 0x10, 'h', 'i', 0x80, 0xc0},
		Meta:    map[string]string{"StartedAt": "2023-07-01T12:34:56Z", "Payload": "aGk="},
		TaskGroups: []*TaskGroup{{
			Name: "cache", Count: 1,
			RestartPolicy: &RestartPolicy{Attempts: 3, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"},
			Tasks: []*Task{{
				Name: "redis", Driver: "docker", User: "",
				// Nomad holds integral numbers here as float64 (from the job's
				// JSON); chronomad writes them as integers, which drivers read
				// the same (they take the config back through JSON).
				Config: map[string]interface{}{
					"image":   "redis:7",
					"ports":   []interface{}{"db"},
					"args":    []interface{}{"-c", 1.5, int64(3)},
					"nested":  map[string]interface{}{"a": map[string]interface{}{"b": []interface{}{int64(1), "x", true, nil}}},
					"Payload": "not-bytes",
				},
				Env:         map[string]string{"A": "1"},
				Resources:   &Resources{CPU: 500, MemoryMB: 256},
				KillTimeout: 5 * time.Second,
			}},
		}},
		Version: 300, SubmitTime: submitNs,
		CreateIndex: 10, ModifyIndex: 70000, JobModifyIndex: 5000000000,
	}
}

func sampleTaskState() *TaskState {
	return &TaskState{
		State: "dead", Failed: false, Restarts: 200,
		LastRestart: time.Time{}, StartedAt: startedAt, FinishedAt: finishedAt,
		Events: []*TaskEvent{{
			Type: "Started", Time: eventNs, Message: "", DisplayMessage: "Task started by client",
			Details: map[string]string{"exit_code": "0"}, ExitCode: -1, Signal: -200, KillTimeout: 5 * time.Second, StartDelay: -70000,
		}},
	}
}

func sampleAlloc() *Allocation {
	return &Allocation{
		ID: "a8198d79-cfdb-6593-a999-1e9adabcba2e", Namespace: "default", EvalID: "e1",
		Name: "example.cache[0]", NodeID: "n1", JobID: "example", Job: sampleJob(), TaskGroup: "cache",
		Resources: &Resources{CPU: 500, MemoryMB: 256},
		Metrics: &AllocMetric{
			NodesEvaluated: 2, ClassFiltered: map[string]int{},
			ScoreMetaData:  []*NodeScoreMeta{{NodeID: "n1", Scores: map[string]float64{"binpack": 0.5, "job-anti-affinity": 0}, NormScore: 1}},
			AllocationTime: 152 * time.Microsecond,
		},
		DesiredStatus: "run", ClientStatus: "running",
		TaskStates:       map[string]*TaskState{"redis": sampleTaskState()},
		AllocStates:      []*AllocState{{Field: 0, Value: "lost", Time: indiaTime}},
		DeploymentStatus: &AllocDeploymentStatus{Healthy: healthy(), Timestamp: startedAt, Canary: false, ModifyIndex: 12},
		CreateIndex:      11, ModifyIndex: 12, AllocModifyIndex: 11,
		CreateTime: submitNs, ModifyTime: eventNs,
	}
}

func sampleNode() *Node {
	return &Node{
		ID: "f0a8cb1e-5b52-4f24-8fb6-5e7e1d3f8a4b", SecretID: "s3cr3t", Datacenter: "dc1", Name: "node-1",
		HTTPAddr:   "127.0.0.1:4646",
		Attributes: map[string]string{"kernel.name": "linux", "UpdateTime": "not a time"},
		Meta:       nil,
		Links:      map[string]string{},
		Drivers: map[string]*DriverInfo{
			"docker": {Attributes: map[string]string{"driver.docker": "1"}, Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: startedAt},
			"exec":   {Detected: false, UpdateTime: time.Time{}},
		},
		DrainStrategy: &DrainStrategy{DrainSpec: DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true}, ForceDeadline: indiaTime, StartedAt: nodeEventAt},
		Status:        "initializing",
		Events: []*NodeEvent{
			{Message: "Node registered", Subsystem: "Cluster", Timestamp: nodeEventAt, CreateIndex: 0},
			{Message: strings.Repeat("long message ", 30), Subsystem: "Driver", Details: map[string]string{"driver": "docker"}, Timestamp: finishedAt},
		},
		CreateIndex: 0, ModifyIndex: 128,
	}
}

// vectorValue is one sample: its Go type name (for decode) and a value.
type vectorValue struct {
	name  string
	typ   string
	value interface{}
	// bytesComparable: no Allocation (whose empty fields msgpack omits but
	// JSON keeps) and numbers typed as the TS tables expect, so TS encoding
	// of the JSON reproduces the canonical bytes.
	bytesComparable bool
}

func samples() []vectorValue {
	bigAlloc := sampleAlloc()
	for i := 0; i < 120; i++ {
		bigAlloc.Job.TaskGroups[0].Tasks = append(bigAlloc.Job.TaskGroups[0].Tasks, sampleJob().TaskGroups[0].Tasks[0])
		bigAlloc.TaskStates[strings.Repeat("t", 1+i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))] = sampleTaskState()
	}
	return []vectorValue{
		{"job", "Job", sampleJob(), true},
		{"task_state", "TaskState", sampleTaskState(), true},
		{"node", "Node", sampleNode(), true},
		{"node_register", "NodeRegisterRequest", &NodeRegisterRequest{
			Node: sampleNode(), NodeEvent: &NodeEvent{Message: "up", Subsystem: "Cluster", Timestamp: indiaTime},
			WriteRequest: WriteRequest{Region: "global", AuthToken: "tok"},
		}, true},
		{"node_update_response", "NodeUpdateResponse", &NodeUpdateResponse{
			HeartbeatTTL: 18 * time.Second, EvalIDs: nil, NodeModifyIndex: 129, LeaderRPCAddr: "10.0.0.1:4647", NumNodes: 1,
			Servers:   []*NodeServerInfo{{RPCAdvertiseAddr: "10.0.0.1:4647", Datacenter: "dc1"}},
			QueryMeta: QueryMeta{Index: 129, LastContact: 0, KnownLeader: true},
		}, true},
		{"node_specific_request", "NodeSpecificRequest", &NodeSpecificRequest{
			NodeID: "n1", SecretID: "s",
			QueryOptions: QueryOptions{Region: "global", MinQueryIndex: 5000000000, MaxQueryTime: 5 * time.Minute, AllowStale: true},
		}, true},
		{"client_allocs", "NodeClientAllocsResponse", &NodeClientAllocsResponse{
			Allocs:        map[string]uint64{"a1": 11, "a2": 300, "a3": 70000, "a4": 5000000000},
			MigrateTokens: map[string]string{},
			QueryMeta:     QueryMeta{Index: 300, LastContact: 1500 * time.Microsecond, KnownLeader: true},
		}, true},
		{"alloc", "Allocation", sampleAlloc(), false},
		{"allocs_get", "AllocsGetResponse", &AllocsGetResponse{Allocs: []*Allocation{sampleAlloc(), {ID: "sparse"}}, QueryMeta: QueryMeta{Index: 12}}, false},
		{"big_alloc", "Allocation", bigAlloc, false},
		{"drain_with_second_offset", "Node", &Node{ID: "n2", DrainStrategy: &DrainStrategy{ForceDeadline: lmtTime}}, false},
		{"numbers", "Numbers", &Numbers{
			Float: 2, Float32: 0.25, Int: -129, Int64: 1688214896123456789, Int8: -128, Uint64: 18446744073709551615, Uint8: 255,
			Duration: -time.Second, Text: strings.Repeat("é", 40), Bytes: []byte{}, Slice: []string{}, Map: nil, Ptr: nil,
			Any: map[string]interface{}{"i": int64(7), "u": uint64(300), "f": 0.5, "s": "x", "l": []interface{}{int64(-1)}},
		}, false},
	}
}
