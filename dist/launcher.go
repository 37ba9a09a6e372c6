package dist

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// LauncherInfo describes the launcher that started this process, as read
// from its environment variables.
type LauncherInfo struct {
	// Name is "Open MPI (mpirun)", "SLURM (srun)", "PMIx" or "" when no
	// launcher was found.
	Name string `json:"name"`
	// Rank and Size are this process's rank and the world size; LocalRank
	// its rank on this machine. Size is 0 when the launcher does not say
	// (plain PMIx); MPI then tells.
	Rank      int `json:"rank"`
	Size      int `json:"size"`
	LocalRank int `json:"local_rank"`
}

// Found reports whether a launcher was detected.
func (l LauncherInfo) Found() bool { return l.Name != "" }

// String describes the launcher, for instance "Open MPI (mpirun), rank 1 of 2".
func (l LauncherInfo) String() string {
	if !l.Found() {
		return "no launcher (one process)"
	}
	if l.Size == 0 {
		return fmt.Sprintf("%s, rank %d", l.Name, l.Rank)
	}
	return fmt.Sprintf("%s, rank %d of %d", l.Name, l.Rank, l.Size)
}

// launcherVars lists the variables each launcher sets, first match wins.
// SLURM_STEP_NUM_TASKS is the step's size under srun; SLURM_NTASKS alone
// may describe the whole allocation.
var launcherVars = []struct {
	name         string
	rank, local  string
	sizes        []string
	sizeOptional bool
}{
	{name: "Open MPI (mpirun)", rank: "OMPI_COMM_WORLD_RANK", local: "OMPI_COMM_WORLD_LOCAL_RANK", sizes: []string{"OMPI_COMM_WORLD_SIZE"}},
	{name: "SLURM (srun)", rank: "SLURM_PROCID", local: "SLURM_LOCALID", sizes: []string{"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}},
	{name: "PMIx", rank: "PMIX_RANK", local: "PMIX_LOCAL_RANK", sizes: []string{"PMIX_SIZE"}, sizeOptional: true},
}

// DetectLauncher reads a launcher's variables through lookup (os.LookupEnv
// in practice). It returns a zero LauncherInfo when none is set, and an
// error when the variables are malformed (a rank that is not a number or
// not below the size).
func DetectLauncher(lookup func(string) (string, bool)) (LauncherInfo, error) {
	for _, v := range launcherVars {
		rs, ok := lookup(v.rank)
		if !ok {
			continue
		}
		l := LauncherInfo{Name: v.name}
		var err error
		if l.Rank, err = atoi(v.rank, rs); err != nil {
			return l, err
		}
		for _, name := range v.sizes {
			if s, ok := lookup(name); ok {
				if l.Size, err = atoi(name, s); err != nil {
					return l, err
				}
				if l.Size < 1 {
					return l, fmt.Errorf("dist: %s: %s=%d is not a world size", v.name, name, l.Size)
				}
				break
			}
		}
		if l.Size == 0 && !v.sizeOptional {
			return l, fmt.Errorf("dist: %s sets %s but no world size (%v)", v.name, v.rank, v.sizes)
		}
		if l.Size > 0 && l.Rank >= l.Size {
			return l, fmt.Errorf("dist: %s: rank %d is not below the world size %d", v.name, l.Rank, l.Size)
		}
		if s, ok := lookup(v.local); ok {
			if l.LocalRank, err = atoi(v.local, s); err != nil {
				return l, err
			}
		}
		return l, nil
	}
	return LauncherInfo{}, nil
}

func atoi(name, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("dist: %s=%q is not a rank or size", name, s)
	}
	return n, nil
}

// Launcher returns the launcher found in this process's environment (see
// DetectLauncher); a malformed environment reads as no launcher.
func Launcher() LauncherInfo {
	l, err := DetectLauncher(os.LookupEnv)
	if err != nil {
		return LauncherInfo{}
	}
	return l
}

// Config configures Init. Its zero value is usable.
type Config struct {
	// Timeout bounds every collective (see DefaultTimeout; negative means
	// no bound). Under MPI the call itself cannot be interrupted: a
	// watchdog returns ErrTimeout and the communicator is broken after.
	Timeout time.Duration `json:"timeout"`
	// Library is the MPI shared library to load. Empty means the
	// KILN_MPI_LIBRARY environment variable, then "libmpi.so.40".
	Library string `json:"library"`
}

// Init returns the communicator for this process's world: under a launcher
// (Open MPI's mpirun, SLURM's srun, PMIx) with more than one rank it opens
// MPI (see OpenMPI); with no launcher, or a world of one, it returns a
// local communicator of size 1 whose collectives are identities. ctx bounds
// MPI's initialisation. It fails when the launcher's variables are
// malformed or MPI cannot be loaded or initialised.
func Init(ctx context.Context) (Communicator, error) {
	return InitConfig(ctx, Config{})
}

// InitConfig is Init with a config.
func InitConfig(ctx context.Context, cfg Config) (Communicator, error) {
	l, err := DetectLauncher(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if !l.Found() || l.Size == 1 {
		return NewLocalGroupConfig(1, LocalConfig{Timeout: cfg.Timeout})[0], nil
	}
	c, err := OpenMPI(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("dist: %s: %w", l, err)
	}
	return c, nil
}
