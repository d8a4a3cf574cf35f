# bash completion for meshplan (installed as share/bash-completion/completions/meshplan).
# Commands are read from `meshplan help`, each command's options from `meshplan COMMAND --help`,
# catalog keys from
# `meshplan catalog KIND`, so the completion follows the binary it completes.

_meshplan_keys() # kind: gpus|links|nodes|models -> the catalog keys
{
    "$1" catalog "$2" 2>/dev/null | awk 'NR > 2 && NF { print $1 }'
}

_meshplan()
{
    local cur prev prog=${COMP_WORDS[0]}
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        local cmds
        cmds=$("$prog" help 2>/dev/null | awk '/^commands:/ { on = 1; next } /^[^ ]/ { on = 0 }
                                           on && /^  [a-z]/ { print $1 }')
        COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        return
    fi
    local cmd=${COMP_WORDS[1]}
    local keys="" files=0
    case "$prev" in
        --model) keys=models; files=1 ;;
        --gpu) keys=gpus ;;
        --scale-out) keys=links ;;
        --cluster) keys=nodes; files=1 ;;
        --catalog|--failures|-o) files=1 ;;
    esac
    if [ -n "$keys" ] || [ "$files" = 1 ]; then
        local words=""
        [ -n "$keys" ] && words=$(_meshplan_keys "$prog" "$keys")
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        [ "$files" = 1 ] && COMPREPLY+=($(compgen -f -- "$cur"))
        return 0
    fi
    if [ "$cmd" = catalog ] && [ "$COMP_CWORD" -eq 2 ]; then
        COMPREPLY=($(compgen -W "gpus links nodes models --json" -- "$cur"))
        return
    fi
    if [[ "$cur" == -* ]]; then
        # The options of `meshplan COMMAND --help` (its "options:" list).
        local opts
        opts=$("$prog" "$cmd" --help 2>/dev/null | awk '/^options:/ { on = 1; next } /^[^ ]/ { on = 0 }
                                                      on && /^  --/ { print $1 }' | sort -u)
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _meshplan meshplan
