# coproc: a bc co-process fed and read through its pipes
coproc CALC { bc -l; }
echo '2^10' >&"${CALC[1]}"
read -r -u "${CALC[0]}" a
echo 'scale=3; 1/8' >&"${CALC[1]}"
read -r -u "${CALC[0]}" b
exec {CALC[1]}>&-
wait "$CALC_PID"
echo "bc said $a and $b"
[ "$a" = 1024 ] && [ "$b" = .125 ] || exit 1
echo OK
