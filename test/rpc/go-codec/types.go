package main

import "time"

// Shapes modelled on the Nomad 1.6.1 RPC structs a client agent exchanges
// with a server: the same field names and Go types where the wire encoding
// depends on them (time.Time, time.Duration, []byte, uint64 indexes, float64
// scores, map[string]interface{} driver config, embedded request/response
// metadata, pointers, the omit-empty marker on Allocation). Written for these
// tests; far fewer fields than Nomad's.

type QueryOptions struct {
	Region        string
	Namespace     string
	MinQueryIndex uint64
	MaxQueryTime  time.Duration
	AllowStale    bool
	Prefix        string
	AuthToken     string
}

type WriteRequest struct {
	Region           string
	Namespace        string
	AuthToken        string
	IdempotencyToken string
}

type QueryMeta struct {
	Index       uint64
	LastContact time.Duration
	KnownLeader bool
}

type WriteMeta struct {
	Index uint64
}

type TaskEvent struct {
	Type           string
	Time           int64 // unix nanoseconds, unlike AllocState.Time
	Message        string
	DisplayMessage string
	Details        map[string]string
	ExitCode       int
	Signal         int
	KillTimeout    time.Duration
	StartDelay     int64
}

type TaskState struct {
	State       string
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

type ParameterizedJobConfig struct {
	Payload      string // "optional" etc., while Job.Payload is []byte
	MetaRequired []string
	MetaOptional []string
}

type RestartPolicy struct {
	Attempts int
	Interval time.Duration
	Delay    time.Duration
	Mode     string
}

type Resources struct {
	CPU      int
	MemoryMB int
}

type Task struct {
	Name        string
	Driver      string
	User        string
	Config      map[string]interface{}
	Env         map[string]string
	Resources   *Resources
	KillTimeout time.Duration
	Meta        map[string]string
}

type TaskGroup struct {
	Name          string
	Count         int
	Tasks         []*Task
	RestartPolicy *RestartPolicy
	Meta          map[string]string
}

type Job struct {
	ID               string
	Name             string
	Type             string
	Priority         int
	Datacenters      []string
	ParameterizedJob *ParameterizedJobConfig
	Payload          []byte
	Meta             map[string]string
	TaskGroups       []*TaskGroup
	Stop             bool
	Version          uint64
	SubmitTime       int64
	CreateIndex      uint64
	ModifyIndex      uint64
	JobModifyIndex   uint64
}

type AllocState struct {
	Field uint8 // Nomad's AllocStateField
	Value string
	Time  time.Time
}

type AllocDeploymentStatus struct {
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

type AllocMetric struct {
	NodesEvaluated int
	NodesFiltered  int
	ClassFiltered  map[string]int
	ScoreMetaData  []*NodeScoreMeta
	AllocationTime time.Duration
}

type Allocation struct {
	// As in Nomad: every field is omitted from msgpack when empty.
	_struct bool `codec:",omitempty"` //nolint:unused

	ID                 string
	Namespace          string
	EvalID             string
	Name               string
	NodeID             string
	JobID              string
	Job                *Job
	TaskGroup          string
	Resources          *Resources
	Metrics            *AllocMetric
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	TaskStates         map[string]*TaskState
	AllocStates        []*AllocState
	DeploymentStatus   *AllocDeploymentStatus
	CreateIndex        uint64
	ModifyIndex        uint64
	AllocModifyIndex   uint64
	CreateTime         int64
	ModifyTime         int64
}

type DriverInfo struct {
	Attributes        map[string]string
	Detected          bool
	Healthy           bool
	HealthDescription string
	UpdateTime        time.Time
}

type NodeEvent struct {
	Message     string
	Subsystem   string
	Details     map[string]string
	Timestamp   time.Time
	CreateIndex uint64
}

type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

type DrainStrategy struct {
	DrainSpec
	ForceDeadline time.Time
	StartedAt     time.Time
}

type Node struct {
	ID            string
	SecretID      string
	Datacenter    string
	Name          string
	HTTPAddr      string
	Attributes    map[string]string
	Meta          map[string]string
	Links         map[string]string
	Drivers       map[string]*DriverInfo
	DrainStrategy *DrainStrategy
	Status        string
	Events        []*NodeEvent
	CreateIndex   uint64
	ModifyIndex   uint64
}

type NodeRegisterRequest struct {
	Node      *Node
	NodeEvent *NodeEvent
	WriteRequest
}

type NodeServerInfo struct {
	RPCAdvertiseAddr string
	Datacenter       string
}

type NodeUpdateResponse struct {
	HeartbeatTTL    time.Duration
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	LeaderRPCAddr   string
	NumNodes        int32
	Servers         []*NodeServerInfo
	QueryMeta
}

type NodeSpecificRequest struct {
	NodeID   string
	SecretID string
	QueryOptions
}

type SingleAllocResponse struct {
	Alloc *Allocation
	QueryMeta
}

type AllocsGetResponse struct {
	Allocs []*Allocation
	QueryMeta
}

type NodeClientAllocsResponse struct {
	Allocs        map[string]uint64
	MigrateTokens map[string]string
	QueryMeta
}

type GenericResponse struct {
	WriteMeta
}

// Numbers covers the decoder's numeric conversions.
type Numbers struct {
	Float    float64
	Float32  float32
	Int      int
	Int64    int64
	Int8     int8
	Uint64   uint64
	Uint8    uint8
	Duration time.Duration
	Text     string
	Bytes    []byte
	Slice    []string
	Map      map[string]string
	Ptr      *Resources
	Any      interface{}
}

// StreamingRpcHeader and StreamingRpcAck frame a streaming RPC (first byte 0x05).
type StreamingRpcHeader struct {
	Method string
}

type StreamingRpcAck struct {
	Error string
}
