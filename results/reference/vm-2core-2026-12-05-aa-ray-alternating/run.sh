#!/bin/bash
# alternate: A = dqn A/A + parked ray_packed, B = dqn A/A alone; as shipped (respawn 10 s), time-stopped at 45 s
cd /tmp/st
for i in 1 2 3 4 5 6; do
  for arm in A B; do
    if [ $arm = A ]; then res="[ray_packed]"; else res="[]"; fi
    echo "$(date -u +%T) $arm$i load $(cut -d' ' -f1-3 /proc/loadavg)"
    .venv/bin/python -m harness selftest scenario=dqn workers=2 selftest.jobs=1 "selftest.effects=[]" "selftest.residents=$res" selftest.seconds=45 compare.precision=1e-9 selftest.store=false selftest.out=/tmp/rayaa/$arm$i > /tmp/rayaa/$arm$i.log 2>&1
    echo "  rc=$?"
  done
done
