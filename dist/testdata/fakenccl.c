/*
 * fakenccl.c: a stand-in for NVIDIA's NCCL, for package dist's tests on
 * machines without a GPU. It exports the part of nccl.h's C API that dist
 * binds, with the same signatures, enum values and calling convention
 * (ncclCommInitRank takes the 128-byte ncclUniqueId by value), but its
 * "device" buffers are host memory and every collective runs on the host,
 * once every rank of the communicator has called it. Written for these
 * tests from NCCL's documented API; it shares no code with NCCL.
 *
 * Built by the tests with: gcc -shared -fPIC -pthread -o libnccl.so.2 fakenccl.c
 *
 * Beyond NCCL's API it exports fakeNcclStat (counters the tests check) and
 * fakeNcclSetAsyncError (makes every communicator report an asynchronous
 * error, as NCCL does when a peer dies).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef int ncclResult_t;

enum { ok = 0, systemError = 2, internalError = 3, invalidArgument = 4, invalidUsage = 5, remoteError = 6, inProgress = 7 };
enum { opSum = 0, opMax = 2, opMin = 3 };
enum { tUint8 = 1, tInt32 = 2, tInt64 = 4, tFloat32 = 7, tFloat64 = 8 };
enum { kAllReduce, kBroadcast, kAllGather, kReduceScatter };

#define MAXRANKS 16
#define MAXQUEUE 64

struct op {
    int kind;
    const void *send;
    void *recv;
    size_t count;
    int dtype, redop, root;
};

struct clique {
    char id[128];
    int nranks, joined;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op ops[MAXRANKS];
    int filled[MAXRANKS];
    int arrived;
    unsigned long done; /* collectives completed */
    int aborted;
    int asyncError;
    int failed; /* result of the last collective */
};

struct comm {
    struct clique *cl;
    int rank;
};

static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER;
static struct clique *cliques[256];
static int ncliques;
static unsigned idCounter;
static int stats[16]; /* see fakeNcclStat */
static int lastDevices[MAXRANKS];

static __thread char lastError[256];
static __thread int groupDepth;
static __thread struct {
    struct comm *c;
    struct op o;
} queue[MAXQUEUE];
static __thread int queued;

static ncclResult_t fail(ncclResult_t code, const char *msg) {
    snprintf(lastError, sizeof lastError, "fake NCCL: %s", msg);
    return code;
}

static void bump(int i) {
    pthread_mutex_lock(&global);
    stats[i]++;
    pthread_mutex_unlock(&global);
}

/* fakeNcclStat returns a counter: 0 ncclGroupEnd calls that issued more than
 * one collective, 1 the ndev of the last ncclCommInitAll, 2 destroyed
 * communicators, 3 aborted communicators, 4 collectives completed, 5 the
 * ncclCommInitRank calls; 100+i the i-th device of the last ncclCommInitAll. */
int fakeNcclStat(int what) {
    int v;
    pthread_mutex_lock(&global);
    v = what >= 100 ? lastDevices[what - 100] : stats[what];
    pthread_mutex_unlock(&global);
    return v;
}

void fakeNcclSetAsyncError(int code) {
    pthread_mutex_lock(&global);
    for (int i = 0; i < ncliques; i++) {
        pthread_mutex_lock(&cliques[i]->mu);
        cliques[i]->asyncError = code;
        pthread_mutex_unlock(&cliques[i]->mu);
    }
    pthread_mutex_unlock(&global);
}

static struct clique *newClique(const char *id, int nranks) {
    struct clique *cl = calloc(1, sizeof *cl);
    memcpy(cl->id, id, 128);
    cl->nranks = nranks;
    pthread_mutex_init(&cl->mu, NULL);
    pthread_cond_init(&cl->cv, NULL);
    cliques[ncliques++] = cl;
    return cl;
}

ncclResult_t ncclGetVersion(int *version) {
    *version = 29901; /* 2.99.1: no real NCCL has it */
    return ok;
}

/* The id is "FAKE", a 4-byte serial, then bytes that depend on their
 * position and the serial, so that a corrupted copy is caught. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    pthread_mutex_lock(&global);
    unsigned serial = ++idCounter;
    pthread_mutex_unlock(&global);
    memcpy(id->internal, "FAKE", 4);
    memcpy(id->internal + 4, &serial, 4);
    for (int i = 8; i < 128; i++) id->internal[i] = (char)(i * 7 + serial);
    return ok;
}

static int validId(const ncclUniqueId *id) {
    unsigned serial;
    if (memcmp(id->internal, "FAKE", 4) != 0) return 0;
    memcpy(&serial, id->internal + 4, 4);
    for (int i = 8; i < 128; i++)
        if (id->internal[i] != (char)(i * 7 + serial)) return 0;
    return 1;
}

ncclResult_t ncclCommInitRank(struct comm **out, int nranks, ncclUniqueId id, int rank) {
    if (!validId(&id)) return fail(invalidArgument, "ncclCommInitRank: the unique id arrived corrupted");
    if (nranks < 1 || nranks > MAXRANKS || rank < 0 || rank >= nranks)
        return fail(invalidArgument, "ncclCommInitRank: bad rank or size");
    bump(5);
    pthread_mutex_lock(&global);
    struct clique *cl = NULL;
    for (int i = 0; i < ncliques; i++)
        if (memcmp(cliques[i]->id, id.internal, 128) == 0) cl = cliques[i];
    if (cl == NULL) cl = newClique(id.internal, nranks);
    pthread_mutex_unlock(&global);
    pthread_mutex_lock(&cl->mu);
    cl->joined++;
    pthread_cond_broadcast(&cl->cv);
    while (cl->joined < cl->nranks) pthread_cond_wait(&cl->cv, &cl->mu);
    pthread_mutex_unlock(&cl->mu);
    struct comm *c = calloc(1, sizeof *c);
    c->cl = cl;
    c->rank = rank;
    *out = c;
    return ok;
}

ncclResult_t ncclCommInitAll(struct comm **comms, int ndev, const int *devlist) {
    if (ndev < 1 || ndev > MAXRANKS) return fail(invalidArgument, "ncclCommInitAll: bad device count");
    char id[128] = {0};
    pthread_mutex_lock(&global);
    snprintf(id, sizeof id, "initall-%u", ++idCounter);
    struct clique *cl = newClique(id, ndev);
    cl->joined = ndev;
    stats[1] = ndev;
    for (int i = 0; i < ndev; i++) lastDevices[i] = devlist ? devlist[i] : i;
    pthread_mutex_unlock(&global);
    for (int i = 0; i < ndev; i++) {
        comms[i] = calloc(1, sizeof(struct comm));
        comms[i]->cl = cl;
        comms[i]->rank = i;
    }
    return ok;
}

ncclResult_t ncclCommDestroy(struct comm *c) {
    if (c == NULL) return fail(invalidArgument, "ncclCommDestroy: NULL communicator");
    bump(2);
    return ok;
}

ncclResult_t ncclCommAbort(struct comm *c) {
    if (c == NULL) return fail(invalidArgument, "ncclCommAbort: NULL communicator");
    bump(3);
    pthread_mutex_lock(&c->cl->mu);
    c->cl->aborted = 1;
    pthread_cond_broadcast(&c->cl->cv);
    pthread_mutex_unlock(&c->cl->mu);
    return ok;
}

ncclResult_t ncclCommGetAsyncError(struct comm *c, int *state) {
    pthread_mutex_lock(&c->cl->mu);
    *state = c->cl->asyncError;
    pthread_mutex_unlock(&c->cl->mu);
    return ok;
}

const char *ncclGetErrorString(ncclResult_t code) {
    switch (code) {
    case ok: return "no error";
    case systemError: return "unhandled system error";
    case internalError: return "internal error";
    case invalidArgument: return "invalid argument";
    case invalidUsage: return "invalid usage";
    case remoteError: return "remote process exited or there was a network error";
    case inProgress: return "operation in progress";
    }
    return "unknown result code";
}

const char *ncclGetLastError(struct comm *c) {
    (void)c;
    return lastError;
}

static size_t typeSize(int dtype) {
    switch (dtype) {
    case tUint8: return 1;
    case tInt32: case tFloat32: return 4;
    case tInt64: case tFloat64: return 8;
    }
    return 0;
}

#define COMBINE(T)                                                        \
    do {                                                                  \
        T *a = acc;                                                       \
        const T *b = src;                                                 \
        for (size_t i = 0; i < n; i++) {                                  \
            if (redop == opMax) a[i] = a[i] > b[i] ? a[i] : b[i];         \
            else if (redop == opMin) a[i] = a[i] < b[i] ? a[i] : b[i];    \
            else a[i] = a[i] + b[i];                                      \
        }                                                                 \
    } while (0)

static void combine(int dtype, int redop, void *acc, const void *src, size_t n) {
    switch (dtype) {
    case tUint8: COMBINE(uint8_t); break;
    case tInt32: COMBINE(int32_t); break;
    case tInt64: COMBINE(int64_t); break;
    case tFloat32: COMBINE(float); break;
    case tFloat64: COMBINE(double); break;
    }
}

/* run executes the collective every rank has deposited. Callers hold cl->mu. */
static int run(struct clique *cl) {
    struct op *o = cl->ops;
    size_t es = typeSize(o[0].dtype), n = o[0].count;
    for (int r = 1; r < cl->nranks; r++)
        if (o[r].kind != o[0].kind || o[r].count != n || o[r].dtype != o[0].dtype ||
            o[r].redop != o[0].redop || o[r].root != o[0].root)
            return fail(invalidUsage, "ranks called different collectives");
    if (o[0].root < 0 || o[0].root >= cl->nranks) return fail(invalidArgument, "root outside the communicator");
    size_t total = o[0].kind == kAllReduce || o[0].kind == kBroadcast ? n : n * cl->nranks;
    char *tmp = malloc(total * es + 1);
    switch (o[0].kind) {
    case kAllReduce:
    case kReduceScatter:
        memcpy(tmp, o[0].send, total * es);
        for (int r = 1; r < cl->nranks; r++) combine(o[0].dtype, o[0].redop, tmp, o[r].send, total);
        for (int r = 0; r < cl->nranks; r++) {
            if (o[0].kind == kAllReduce) memcpy(o[r].recv, tmp, n * es);
            else memcpy(o[r].recv, tmp + r * n * es, n * es);
        }
        break;
    case kBroadcast:
        memcpy(tmp, o[o[0].root].send, n * es);
        for (int r = 0; r < cl->nranks; r++) memcpy(o[r].recv, tmp, n * es);
        break;
    case kAllGather:
        for (int r = 0; r < cl->nranks; r++) memcpy(tmp + r * n * es, o[r].send, n * es);
        for (int r = 0; r < cl->nranks; r++) memcpy(o[r].recv, tmp, total * es);
        break;
    }
    free(tmp);
    return ok;
}

/* deposit records c's part of the current collective and runs it when it is
 * the last part; it returns the number of collectives that must be complete
 * for this one to be. */
static ncclResult_t deposit(struct comm *c, struct op o, unsigned long *target) {
    struct clique *cl = c->cl;
    if (typeSize(o.dtype) == 0) return fail(invalidArgument, "unsupported data type");
    pthread_mutex_lock(&cl->mu);
    if (cl->aborted) {
        pthread_mutex_unlock(&cl->mu);
        return fail(systemError, "communicator aborted");
    }
    if (cl->filled[c->rank]) {
        pthread_mutex_unlock(&cl->mu);
        return fail(invalidUsage, "two collectives of one rank in flight");
    }
    cl->ops[c->rank] = o;
    cl->filled[c->rank] = 1;
    *target = cl->done + 1;
    if (++cl->arrived == cl->nranks) {
        cl->failed = run(cl);
        cl->arrived = 0;
        memset(cl->filled, 0, sizeof cl->filled);
        cl->done++;
        pthread_mutex_lock(&global);
        stats[4]++;
        pthread_mutex_unlock(&global);
        pthread_cond_broadcast(&cl->cv);
    }
    pthread_mutex_unlock(&cl->mu);
    return ok;
}

/* await blocks until the collective is complete or the clique aborted. */
static ncclResult_t await(struct comm *c, unsigned long target) {
    struct clique *cl = c->cl;
    pthread_mutex_lock(&cl->mu);
    while (cl->done < target && !cl->aborted) pthread_cond_wait(&cl->cv, &cl->mu);
    int aborted = cl->done < target, failed = cl->failed;
    pthread_mutex_unlock(&cl->mu);
    if (aborted) return fail(systemError, "communicator aborted while waiting for peers");
    return failed;
}

static ncclResult_t submit(struct comm *c, struct op o) {
    if (c == NULL) return fail(invalidArgument, "NULL communicator");
    if (groupDepth > 0) {
        if (queued == MAXQUEUE) return fail(invalidUsage, "too many calls in one group");
        queue[queued].c = c;
        queue[queued].o = o;
        queued++;
        return ok;
    }
    unsigned long target;
    ncclResult_t r = deposit(c, o, &target);
    return r != ok ? r : await(c, target);
}

ncclResult_t ncclGroupStart(void) {
    groupDepth++;
    return ok;
}

ncclResult_t ncclGroupEnd(void) {
    if (groupDepth == 0) return fail(invalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--groupDepth > 0) return ok;
    int n = queued;
    unsigned long targets[MAXQUEUE];
    ncclResult_t r = ok;
    queued = 0;
    if (n > 1) bump(0);
    for (int i = 0; i < n && r == ok; i++) r = deposit(queue[i].c, queue[i].o, &targets[i]);
    for (int i = 0; i < n && r == ok; i++) r = await(queue[i].c, targets[i]);
    return r;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, struct comm *c, void *stream) {
    (void)stream;
    struct op o = {kAllReduce, send, recv, count, dtype, op, 0};
    return submit(c, o);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, struct comm *c, void *stream) {
    (void)stream;
    struct op o = {kBroadcast, send, recv, count, dtype, 0, root};
    return submit(c, o);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, int dtype, struct comm *c, void *stream) {
    (void)stream;
    struct op o = {kAllGather, send, recv, count, dtype, 0, 0};
    return submit(c, o);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, int dtype, int op, struct comm *c, void *stream) {
    (void)stream;
    struct op o = {kReduceScatter, send, recv, count, dtype, op, 0};
    return submit(c, o);
}
