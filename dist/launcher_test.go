package dist

import (
	"context"
	"strings"
	"testing"

	"github.com/kiln-ml/kiln/tensor"
)

func TestDetectLauncher(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    LauncherInfo
		text    string
		wantErr string
	}{
		{"none", map[string]string{"HOME": "/root"}, LauncherInfo{}, "no launcher (one process)", ""},
		{"open mpi", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "PMIX_RANK": "1"},
			LauncherInfo{Name: "Open MPI (mpirun)", Rank: 1, Size: 2, LocalRank: 1}, "Open MPI (mpirun), rank 1 of 2", ""},
		{"slurm step", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_STEP_NUM_TASKS": "4", "SLURM_LOCALID": "1"},
			LauncherInfo{Name: "SLURM (srun)", Rank: 3, Size: 4, LocalRank: 1}, "SLURM (srun), rank 3 of 4", ""},
		{"slurm ntasks only", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2"},
			LauncherInfo{Name: "SLURM (srun)", Rank: 0, Size: 2}, "SLURM (srun), rank 0 of 2", ""},
		{"pmix without size", map[string]string{"PMIX_RANK": "2"},
			LauncherInfo{Name: "PMIx", Rank: 2}, "PMIx, rank 2", ""},
		{"rank not a number", map[string]string{"OMPI_COMM_WORLD_RANK": "x", "OMPI_COMM_WORLD_SIZE": "2"}, LauncherInfo{}, "", `OMPI_COMM_WORLD_RANK="x"`},
		{"rank past size", map[string]string{"SLURM_PROCID": "2", "SLURM_NTASKS": "2"}, LauncherInfo{}, "", "rank 2 is not below the world size 2"},
		{"no size", map[string]string{"OMPI_COMM_WORLD_RANK": "0"}, LauncherInfo{}, "", "no world size"},
		{"zero size", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "0"}, LauncherInfo{}, "", "is not a world size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DetectLauncher(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got.String() != tc.text {
				t.Errorf("got %+v (%q), want %+v (%q)", got, got, tc.want, tc.text)
			}
		})
	}
}

func TestInitWithoutLauncher(t *testing.T) {
	unsetLauncher(t)
	c, err := Init(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Rank() != 0 || c.Size() != 1 || c.LocalRank() != 0 || c.Backend() != "local" {
		t.Fatalf("got rank %d size %d local %d backend %s", c.Rank(), c.Size(), c.LocalRank(), c.Backend())
	}
	x := tensor.FromFloat32s(tensor.CPU(), []float32{1, -2, 3}, 3, 1)
	for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
		if err := c.AllReduce(x, op); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Broadcast(x, 0); err != nil {
		t.Fatal(err)
	}
	g, err := c.AllGather(x)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.ReduceScatter(x, Sum)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []*tensor.Tensor{x, g, s} {
		if err := checkTensor(got, tensor.Float32, []int{3, 1}, []float64{1, -2, 3}); err != nil {
			t.Error(err)
		}
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
}

func TestInitMalformedLauncher(t *testing.T) {
	unsetLauncher(t)
	t.Setenv("SLURM_PROCID", "five")
	t.Setenv("SLURM_NTASKS", "8")
	if _, err := Init(context.Background()); err == nil || !strings.Contains(err.Error(), "SLURM_PROCID") {
		t.Fatalf("got %v", err)
	}
}

func TestInitWorldOfOneUnderLauncher(t *testing.T) {
	unsetLauncher(t)
	t.Setenv("SLURM_PROCID", "0")
	t.Setenv("SLURM_NTASKS", "1")
	c, err := Init(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Size() != 1 || c.Backend() != "local" {
		t.Fatalf("got size %d backend %s", c.Size(), c.Backend())
	}
}
