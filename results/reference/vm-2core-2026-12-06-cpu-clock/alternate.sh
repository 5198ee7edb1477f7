#!/bin/bash
# usage: abmulti.sh N OUT rounds "LABEL=a TREE=/x BD=1" "LABEL=b TREE=/y BD=1" ...  (order rotates each pair)
N=$1; OUT=$2; R=$3; shift 3
: > $OUT
for i in $(seq $N); do
  if (( i % 2 )); then vs=("$@"); else vs=(); for ((j=$#; j>=1; j--)); do vs+=("${!j}"); done; fi
  for e in "${vs[@]}"; do env $e W=${W:-2} /work/main/.venv/bin/python "$(dirname "$0")"/ab.py $R >> $OUT 2>>$OUT.err; done
done
