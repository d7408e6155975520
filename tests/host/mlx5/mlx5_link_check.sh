#!/bin/sh
# libkinet.so and rdma-core: no ELF dependency (DT_NEEDED) on libibverbs or
# libmlx5 and no undefined symbol of theirs (a symbol without NEEDED would
# fail at the first call where rdma-core is absent), yet the ConnectX
# provider is inside when the build had rdma-core's headers (it names the
# libraries it dlopens).  Usage: mlx5_link_check.sh LIBKINET HAVE_MLX5(0|1)
set -u
LIB=$1
HAVE=$2
for tool in readelf nm; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed (binutils)"; exit 77; }
done
[ -f "$LIB" ] || { echo "FAIL: no such file: $LIB"; exit 1; }
failed=0

needed=$(readelf -d "$LIB" | grep NEEDED)
echo "$needed"
if echo "$needed" | grep -Eq 'libibverbs|libmlx5|librdmacm'; then
	echo "FAIL: $LIB has an ELF dependency on rdma-core"
	failed=1
fi
undef=$(nm -D --undefined-only "$LIB" | grep -E ' (_?ibv_|mlx5dv_|cu[A-Z])' || true)
if [ -n "$undef" ]; then
	echo "FAIL: $LIB needs rdma-core or CUDA driver symbols at load time:"
	echo "$undef"
	failed=1
fi
if [ "$HAVE" = 1 ]; then
	for name in libibverbs.so.1 libmlx5.so.1; do
		if ! grep -qa "$name" "$LIB"; then
			echo "FAIL: $LIB does not name $name: is the mlx5 provider built in?"
			failed=1
		fi
	done
fi
[ "$failed" = 0 ] && echo "ok: no link-time dependency on rdma-core (provider built in: $HAVE)"
exit $failed
