#!/usr/bin/env python3
"""Generate the verbs front door's ABI shell from the system's rdma-core.

Writes, under src/verbs/:
  libibverbs.map, libmlx5.map, libefa.map   linker version scripts
  ibverbs/stubs.c, mlx5/stubs.c, efa/efa.c  a weak stub per exported function

The version nodes, their inheritance and the symbols of each node are read
from the installed libraries (objdump -T / -p), so the maps carry exactly
what rdma-core exports (Debian 12: rdma-core v44).  The prototypes come
from the installed headers (gcc -aux-info), except for the symbols no
installed header declares (rdma-core's driver.h: the private node and a
few IBVERBS_1.0 helpers), whose prototypes are written below.

Run once on a machine with libibverbs1, ibverbs-providers and
libibverbs-dev installed; the outputs are committed, so that the build
needs only the headers.  Then clang-format the .c files (the script does
it when clang-format is found).
"""

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERBS = os.path.join(ROOT, "src", "verbs")

LIBS = [
    # (soname, map, stub file, headers, kinet's own extra node)
    ("libibverbs.so.1", "libibverbs.map", "ibverbs/stubs.c",
     ["infiniband/verbs.h"], "KINET_VERBS_PRIVATE_0 {\n\tglobal:\n\t\tkinet_verbs_*;\n};\n"),
    ("libmlx5.so.1", "libmlx5.map", "mlx5/stubs.c",
     ["infiniband/verbs.h", "infiniband/mlx5dv.h"], None),
    ("libefa.so.1", "libefa.map", "efa/efa.c",
     ["infiniband/verbs.h", "infiniband/efadv.h"], None),
]

# Implemented for real in ibverbs/strings.c and ibverbs/misc.c (they need
# no device): no stub, or the weak one would be dead code.
REAL = {
    "ibv_node_type_str", "ibv_port_state_str", "ibv_event_type_str", "ibv_wc_status_str",
    "ibv_rate_to_mult", "mult_to_ibv_rate", "ibv_rate_to_mbps", "mbps_to_ibv_rate",
    "ibv_read_sysfs_file", "ibv_get_sysfs_path", "ibv_copy_ah_attr_from_kern",
    "ibv_copy_path_rec_from_kern", "ibv_copy_path_rec_to_kern", "ibv_copy_qp_attr_from_kern",
    "ibv_fork_init", "ibv_is_fork_initialized", "ibv_dontfork_range", "ibv_dofork_range",
    "verbs_allow_disassociate_destroy",
}

# Old-version entry points served for real (src/verbs/mlx5/mlx5dv.c):
# mlx5dv_init_obj@MLX5_1.0 takes the same arguments as the default one.
REAL_COMPAT = {("mlx5dv_init_obj", "MLX5_1.0")}

# Functions whose failure is -1 with errno set (rdma-core's man pages and
# code); every other int-returning verb returns the errno itself.
MINUS_ONE = {
    "ibv_get_async_event", "ibv_get_cq_event", "ibv_query_gid", "ibv_query_pkey",
    "ibv_get_pkey_index", "ibv_get_device_index", "ibv_init_ah_from_wc",
    "ibv_resolve_eth_l2_from_gid", "ibv_query_gid_type", "ibv_read_ibdev_sysfs_file",
    "ibv_rereg_mr",  # IBV_REREG_MR_ERR_INPUT
    "mlx5dv_vfio_get_events_fd", "mlx5dv_devx_get_event",
}
# Returns a count or a negative errno.
NEG_ERRNO = {"_ibv_query_gid_table"}
# Called by libfabric at every start to probe for EFA: a stub, but silent.
QUIET = {"efadv_query_device"}

# Prototypes of exports that no installed header declares (rdma-core v44's
# driver.h, marshall.h and the IBVERBS_1.1 compat ibv_register_driver).
# Their argument types stay incomplete: a stub never looks inside.
UNDECLARED = r"""
void ibv_register_driver(const char *name, void *init_func);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev, const char *fnfmt, ...);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index, enum ibv_gid_type_sysfs *type);
void verbs_register_driver_34(const struct verbs_device_ops *ops);
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops);
void verbs_uninit_context(struct verbs_context *context);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size, struct verbs_context *context_offset, uint32_t driver_id);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context, struct ibv_comp_channel *channel, void *cq_context);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
void __verbs_log(struct verbs_context *ctx, const char *fmt, ...);
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer *link);
int ibv_cmd_get_context(struct verbs_context *context, struct ibv_get_context *cmd, size_t cmd_size, struct ib_uverbs_get_context_resp *resp, size_t resp_size);
int ibv_cmd_query_context(struct ibv_context *ctx, struct ibv_command_buffer *driver);
int ibv_cmd_create_flow_action_esp(struct ibv_context *ctx, struct ibv_flow_action_esp_attr *attr, struct verbs_flow_action *flow_action, struct ibv_command_buffer *driver);
int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action *flow_action, struct ibv_flow_action_esp_attr *attr, struct ibv_command_buffer *driver);
int ibv_cmd_query_device_any(struct ibv_context *context, const struct ibv_query_device_ex_input *input, struct ibv_device_attr_ex *attr, size_t attr_size, struct ib_uverbs_ex_query_device_resp *resp, size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *port_attr, struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd, struct ibv_alloc_pd *cmd, size_t cmd_size, struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd, int vxrcd_size, struct ibv_xrcd_init_attr *attr, struct ibv_open_xrcd *cmd, size_t cmd_size, struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access, struct verbs_mr *vmr, struct ibv_reg_mr *cmd, size_t cmd_size, struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length, uint64_t hca_va, int access, struct ibv_pd *pd, struct ibv_rereg_mr *cmd, size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr, uint32_t mr_handle);
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access, struct verbs_mr *vmr);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw, struct ibv_alloc_mw *cmd, size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel, int comp_vector, struct ibv_cq *cq, struct ibv_create_cq *cmd, size_t cmd_size, struct ib_uverbs_create_cq_resp *resp, size_t resp_size);
int ibv_cmd_create_cq_ex(struct ibv_context *context, const struct ibv_cq_init_attr_ex *cq_attr, struct verbs_cq *cq, struct ibv_create_cq_ex *cmd, size_t cmd_size, struct ib_uverbs_ex_create_cq_resp *resp, size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd, size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp, size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr, struct ibv_modify_cq *cmd, size_t cmd_size);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq, struct ibv_srq_init_attr *attr, struct ibv_create_srq *cmd, size_t cmd_size, struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq, struct ibv_srq_init_attr_ex *attr_ex, struct ibv_create_xsrq *cmd, size_t cmd_size, struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask, struct ibv_modify_srq *cmd, size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd, size_t cmd_size, struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp, struct ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd, size_t cmd_size, struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp, struct ibv_qp_init_attr_ex *qp_attr, struct ibv_create_qp_ex *cmd, size_t cmd_size, struct ib_uverbs_ex_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp, int vqp_sz, struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd, size_t cmd_size, struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask, struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_modify_qp *cmd, size_t cmd_size);
int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_modify_qp_ex *cmd, size_t cmd_size, struct ib_uverbs_ex_modify_qp_resp *resp, size_t resp_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr, struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id, struct ibv_flow_attr *flow_attr, void *ucmd, size_t ucmd_size);
int ibv_cmd_destroy_flow(struct ibv_flow *flow_id);
int ibv_cmd_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq, struct ibv_create_wq *cmd, size_t cmd_size, struct ib_uverbs_ex_create_wq_resp *resp, size_t resp_size);
int ibv_cmd_destroy_flow_action(struct verbs_flow_action *action);
int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr, struct ibv_modify_wq *cmd, size_t cmd_size);
int ibv_cmd_destroy_wq(struct ibv_wq *wq);
int ibv_cmd_create_rwq_ind_table(struct ibv_context *context, struct ibv_rwq_ind_table_init_attr *init_attr, struct ibv_rwq_ind_table *rwq_ind_table, struct ib_uverbs_ex_create_rwq_ind_table_resp *resp, size_t resp_size);
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table);
int ibv_cmd_create_counters(struct ibv_context *context, struct ibv_counters_init_attr *init_attr, struct verbs_counters *vcounters, struct ibv_command_buffer *link);
int ibv_cmd_destroy_counters(struct verbs_counters *vcounters);
int ibv_cmd_read_counters(struct verbs_counters *vcounters, uint64_t *counters_value, uint32_t ncounters, uint32_t flags, struct ibv_command_buffer *link);
int ibv_cmd_alloc_dm(struct ibv_context *ctx, const struct ibv_alloc_dm_attr *dm_attr, struct verbs_dm *dm, struct ibv_command_buffer *link);
int ibv_cmd_free_dm(struct verbs_dm *dm);
int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm, uint64_t offset, size_t length, unsigned int access, struct verbs_mr *vmr, struct ibv_command_buffer *link);
"""

# Array parameters, which -aux-info prints as pointers (gcc then warns
# that the definition differs from the header's declaration).
ARRAY_PARAMS = {("ibv_resolve_eth_l2_from_gid", 2): "uint8_t %s[6]"}

PROTO = re.compile(r"^(?:extern\s+)?(.*?)\b(\w+)\s*\((.*)\);$")


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def libdir_of(soname):
    """The library's path: dpkg -S when dpkg knows it, else the multiarch dir."""
    try:
        for line in run(["dpkg", "-S", soname]).splitlines():
            path = line.split(": ", 1)[1]
            if path.endswith("/" + soname):
                return path
    except (OSError, subprocess.CalledProcessError):
        pass
    arch = run(["gcc", "-print-multiarch"]).strip()
    return "/usr/lib/%s/%s" % (arch, soname)


def exports(path):
    """[(name, node, default, kind)] of the library's defined dynamic symbols."""
    out = []
    for line in run(["objdump", "-T", path]).splitlines():
        f = line.split()
        if len(f) < 7 or "*UND*" in f or "*ABS*" in f:
            continue
        kind = f[2] if f[2] in ("DF", "DO") else f[3]
        if kind not in ("DF", "DO"):
            continue
        ver = f[-2]
        default = not ver.startswith("(")
        out.append((f[-1], ver.strip("()"), default, kind))
    return out


def nodes(path):
    """[(node, parent or None)] in definition order."""
    text = run(["objdump", "-p", path])
    text = text.split("Version definitions:", 1)[1].split("Version References:", 1)[0]
    result = []
    for line in text.splitlines():
        f = line.split()
        if len(f) == 4 and f[0].isdigit():
            if f[1] == "0x01":  # the library's own name, not a node
                continue
            result.append([f[3], None])
        elif len(f) == 1 and result:
            result[-1][1] = f[0]
    return [tuple(n) for n in result]


def prototypes(headers):
    """name -> (return type, [param types], variadic) from the installed headers."""
    src = "".join("#include <%s>\n" % h for h in headers)
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "kinet-gen-verbs-%d" % os.getpid())
    os.makedirs(tmp, exist_ok=True)
    with open(os.path.join(tmp, "h.c"), "w") as f:
        f.write(src)
    subprocess.run(["gcc", "-aux-info", os.path.join(tmp, "aux"), "-c", os.path.join(tmp, "h.c"),
                    "-o", os.path.join(tmp, "h.o")], check=True)
    protos = {}
    with open(os.path.join(tmp, "aux")) as f:
        for line in f:
            m = re.match(r"/\* (\S+):\d+:\w+ \*/ (.*)$", line.strip())
            if not m or "infiniband/" not in m.group(1):
                continue
            p = parse(m.group(2), named=False)
            if p:
                protos[p[0]] = p[1:]
    shutil.rmtree(tmp)
    for line in UNDECLARED.strip().splitlines():
        p = parse(line, named=True)
        protos.setdefault(p[0], p[1:])
    return protos


def parse(decl, named):
    m = PROTO.match(decl.strip())
    if not m or "(*" in decl or m.group(1).strip().startswith("static"):
        return None
    ret, name, params = m.group(1).strip(), m.group(2), m.group(3).strip()
    plist, variadic = [], False
    if params and params != "void":
        for p in [x.strip() for x in params.split(",")]:
            if p == "...":
                variadic = True
            elif named:
                plist.append(re.sub(r"\s*\b\w+$", "", p))
            else:
                plist.append(p)
    return name, ret, plist, variadic


def failure(name, ret):
    """The statement a stub ends with, by rdma-core's convention for name."""
    if ret == "void":
        return None
    if ret.endswith("*"):
        return "NULL"
    if name in NEG_ERRNO:
        return "-EOPNOTSUPP"
    if name in MINUS_ONE:
        return "-1"
    if ret == "int":
        return "EOPNOTSUPP"
    if ret == "bool":
        return "false"
    return "0"  # a guid, a count, a flag word: nothing


def write_map(path, soname, node_list, syms, extra):
    by_node = {n: [] for n, _ in node_list}
    for name, node, default, _ in syms:
        if default:
            by_node[node].append(name)
    compat_nodes = {node for _, node, default, _ in syms if not default}
    # `local: *` goes in the first node that holds no compat symbol: a
    # symbol bound by .symver to name@NODE is hidden by a local pattern of
    # NODE itself (GNU ld), and listing it there as global would also claim
    # the default definition of the same name for that old node.
    local_node = next(n for n, _ in node_list if n not in compat_nodes)
    lines = ["/* %s's symbol versions, as Debian 12's rdma-core v44 exports them." % soname,
             " * Generated by scripts/gen-verbs-maps.py from the installed library; do not edit.",
             " * Compat (non-default) versions are bound in the stubs with .symver. */", ""]
    for n, parent in node_list:
        lines.append("%s {" % n)
        if by_node[n]:
            lines.append("\tglobal:")
            lines += ["\t\t%s;" % s for s in sorted(by_node[n])]
        if n == local_node:
            lines.append("\tlocal:\n\t\t*;")
        lines.append("}%s;" % (" " + parent if parent else ""))
        lines.append("")
    text = "\n".join(lines)
    if extra:
        text += "\n" + extra
    with open(path, "w") as f:
        f.write(text)


def stub(name, proto, cname=None, quiet=False):
    ret, params, variadic = proto
    args = ", ".join(ARRAY_PARAMS.get((name, i), "%s%s%%s" % (t, "" if t.endswith("*") else " ")) % ("a%d" % i)
                     for i, t in enumerate(params))
    if variadic:
        args = (args + ", ..." if args else "...")
    if not args:
        args = "void"
    value = failure(name, ret)
    head = "%s%s%s(%s)" % (ret, "" if ret.endswith("*") else " ", cname or name, args)
    body = ["\tKINET_VERBS_STUB(\"%s\");" % name] if not quiet else ["\terrno = EOPNOTSUPP;"]
    if value is not None:
        body.append("\treturn %s;" % value)
    return head, body


def write_stubs(path, soname, syms, protos, headers):
    out = ["/* Weak stubs for every function %s exports (rdma-core v44's ABI)." % soname,
           " * Generated by scripts/gen-verbs-maps.py; edit the script, not this file.",
           " *",
           " * A program linked against rdma-core must find each versioned symbol it",
           " * imports (Debian links BIND_NOW), even those kinet does not implement.",
           " * Each stub is weak: the front door's strong definition in another file of",
           " * the same library wins at link time, so what remains here is exactly what",
           " * kinet does not support.  A stub says so once on stderr, sets errno to",
           " * EOPNOTSUPP and fails as rdma-core's function fails (NULL, the errno, or",
           " * -1).  Old (non-default) versions get their own stub, bound by .symver. */",
           "",
           "#include <errno.h>",
           "#include <stdbool.h>",
           "#include <stddef.h>",
           "#include <stdint.h>"]
    out += ["#include <%s>" % h for h in headers]
    out += ["", "#include \"stub.h\"", "",
            "/* A stub ignores its arguments. */",
            "#pragma GCC diagnostic ignored \"-Wunused-parameter\"",
            "#pragma GCC diagnostic ignored \"-Wmissing-prototypes\"", ""]
    fn = sorted({s[0] for s in syms if s[3] == "DF" and s[2] and s[0] not in REAL})
    undeclared = [n for n in fn if n in UNDECLARED_NAMES]
    if undeclared:
        out.append("/* No installed header declares these (rdma-core's driver.h). */")
        out += ["struct %s;" % t for t in sorted(incomplete_types(undeclared, protos))]
        if "ibv_query_gid_type" in undeclared:
            out.append("enum ibv_gid_type_sysfs { IBV_GID_TYPE_SYSFS_IB_ROCE_V1, IBV_GID_TYPE_SYSFS_ROCE_V2 };")
        for n in undeclared:
            head, _ = stub(n, protos[n])
            out.append("%s;" % head)
        out.append("")
    # verbs.h turns some names into macros (ibv_reg_mr, ibv_query_port, ...).
    for n in fn:
        out.append("#undef %s" % n)
    out.append("")
    for n in fn:
        if n not in protos:
            sys.exit("no prototype for %s: add it to UNDECLARED" % n)
        head, body = stub(n, protos[n], quiet=n in QUIET)
        out += ["KINET_VERBS_WEAK %s" % head, "{"] + body + ["}", ""]
    for name, node, default, kind in sorted(syms):
        if default or (name, node) in REAL_COMPAT:
            continue
        cname = "compat_%s_%s" % (name, node.replace(".", "_"))
        head, body = stub(name, protos[name], cname=cname)
        body[0] = body[0].replace('"%s"' % name, '"%s@%s"' % (name, node))
        out.append("/* %s@%s: the old ABI's entry point, not served. */" % (name, node))
        out += ["KINET_VERBS_COMPAT %s" % head, "{"] + body + ["}",
                "__asm__(\".symver %s, %s@%s\");" % (cname, name, node), ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


UNDECLARED_NAMES = {PROTO.match(l).group(2) for l in UNDECLARED.strip().splitlines()}


def incomplete_types(names, protos):
    types = set()
    for n in names:
        ret, params, _ = protos[n]
        for t in [ret] + params:
            types.update(re.findall(r"struct (\w+)", t))
    # Only those the installed headers do not declare.
    known = set()
    for h in ["infiniband/verbs.h"]:
        with open(os.path.join("/usr/include", h)) as f:
            known.update(re.findall(r"struct (\w+)\s*[{;]", f.read()))
    return types - known


def main():
    written = []
    for soname, mapname, stubname, headers, extra in LIBS:
        path = libdir_of(soname)
        syms = exports(path)
        node_list = nodes(path)
        protos = prototypes(headers)
        write_map(os.path.join(VERBS, mapname), soname, node_list, syms, extra)
        write_stubs(os.path.join(VERBS, stubname), soname, syms, protos, headers)
        written.append(os.path.join(VERBS, stubname))
        print("%s: %s, %d symbols in %d nodes" % (soname, path, len(syms), len(node_list)))
    if shutil.which("clang-format"):
        subprocess.run(["clang-format", "-i"] + written, check=True, cwd=ROOT)


if __name__ == "__main__":
    main()
