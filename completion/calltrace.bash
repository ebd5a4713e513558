# bash completion for calltrace(1)                         -*- shell-script -*-
#
# Everything comes from the calltrace being completed, at completion time, so
# it follows the options of the installed binary: the commands from
# 'calltrace --help', each command's options, their value names and its
# positional arguments from 'calltrace COMMAND --help'; function names from
# 'calltrace list' of the program on the command line (or of -p PID's
# /proc/PID/exe), or from 'calltrace report' of the record file; the values an
# option accepts from what calltrace answers to a wrong one.

# The commands: the first word of each line of the "commands:" block.
_calltrace_commands()
{
    "$1" --help 2>/dev/null | awk '/^commands:/ {on = 1; next} on && NF == 0 {exit} on {print $1}'
}

# One line per option of COMMAND: "NAME VALUE KIND", VALUE the name of its
# value in --help ("-" for none), KIND "record" when its description speaks
# of a record file ("-" otherwise): "  -o, --output FILE   record file (...)"
# gives "-o FILE record" and "--output FILE record".  The positional
# arguments' lines ("  FILE   record file (...)") give "@FILE - record".
_calltrace_options()
{
    local line spec desc part name value kind shared
    local -a parts
    while IFS= read -r line; do
        [[ $line =~ ^\ {1,10}([^ ].*)$ ]] || continue
        spec=${BASH_REMATCH[1]%%  *}   # the option column ends at two spaces
        desc=${BASH_REMATCH[1]#"$spec"}
        desc=${desc#"${desc%%[! ]*}"}
        kind=-
        [[ $desc == *"record file"* ]] && kind=record
        if [[ $spec != -* ]]; then
            [[ $spec =~ ^[A-Z][A-Z_]*$ ]] && printf '@%s - %s\n' "$spec" "$kind"
            continue
        fi
        IFS=, read -ra parts <<<"$spec"
        # "-A, --args GLOB": the short form takes the value the long one names
        shared=-
        for part in "${parts[@]}"; do
            part=${part# }
            [[ $part == *[\ =]* ]] && shared=${part#*[ =]}
        done
        for part in "${parts[@]}"; do
            part=${part# }
            name=${part%%[ =]*}
            value=$shared
            [[ $part == *[\ =]* ]] && value=${part#*[ =]}
            [[ $name == -* ]] && printf '%s %s %s\n' "$name" "${value// /_}" "$kind"
        done
    done < <("$1" "$2" --help 2>/dev/null)
}

# The positional arguments of COMMAND in order, from its "Usage:" (or "or:")
# line ("calltrace list [options] BINARY [GLOB...]" gives "BINARY GLOB..."),
# leaving out bracketed options ("[-o FILE]").
_calltrace_positionals()
{
    local usage word skip=0
    usage=$("$1" "$2" --help 2>/dev/null | sed -n -E "s/^ *(Usage|or): +[^ ]+ $2 //p" | head -n 1)
    for word in $usage; do
        if ((skip)); then
            [[ $word == *"]" ]] && skip=0
            continue
        fi
        if [[ $word == "[-"* && $word != *"]" ]]; then
            skip=1
            continue
        fi
        word=${word#[}
        word=${word%]}
        [[ $word =~ ^[A-Z][A-Z_]*(\.\.\.)?$ ]] && printf '%s\n' "$word"
    done
}

# The values OPTION of COMMAND accepts, from calltrace's answer to a wrong
# one: "unknown format 'x' (use text, json or yaml)", "--color takes auto,
# always or never", "--otlp-protocol is http/protobuf (default) or
# http/json".  The record file given cannot exist and record gets no
# program, so nothing is read or run.
_calltrace_choices()
{
    local msg list word='[a-z0-9_./-]+( \(default\))?'
    msg=$("$1" "$2" "$3=?" /nonexistent/calltrace-completion 2>&1 >/dev/null </dev/null)
    [[ $msg =~ (use|takes|is)\ ($word(, $word)*,?\ or\ $word) ]] || return
    list=${BASH_REMATCH[2]//,/}
    list=${list// or / }
    printf '%s\n' ${list// (default)/}
}

# Functions whose names start with $cur: of BINARY (calltrace list), or of a
# record file (calltrace report; a large file is given 2 seconds).
_calltrace_functions()
{
    local ct=$1 from=$2 what=$3 prefix="" name k
    local -a names
    # the word as the shell will pass it: 'main.(*P or main.\(\*P
    if [[ $cur == [\'\"]* ]]; then
        prefix=${cur:1}
    else
        for ((k = 0; k < ${#cur}; k++)); do
            [[ ${cur:k:1} == \\ ]] && ((k++))
            prefix+=${cur:k:1}
        done
    fi
    [[ $prefix == *[@:]* ]] && return # GLOB@args, LIB:GLOB
    if [[ $from == binary ]]; then
        mapfile -t names < <("$ct" list --no-args "$what" "$prefix*" 2>/dev/null |
            awk '$1 ~ /^0x/ {$1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print}')
    else
        mapfile -t names < <(timeout 2 "$ct" report --format=json --sort=func "$what" 2>/dev/null |
            sed -n 's/^{"func":"\(\([^"\\]\|\\.\)*\)".*/\1/p')
    fi
    # -F takes a glob: a name with [ (Go generics: main.Max[go.shape.int_0])
    # matches itself only with the brackets escaped
    for name in "${names[@]}"; do
        [[ $name == "$prefix"* ]] && COMPREPLY+=("${name//\[/\\[}")
    done
    # and the shell's quoting on top: main.\(\*T\).f
    ((${#COMPREPLY[@]})) && compopt -o filenames
}

_calltrace()
{
    local cur prev words cword split
    _init_completion -s -n : || return

    local ct=${words[0]/#\~/$HOME}
    [[ $ct == */* ]] || ct=$(type -P "$ct") || return

    local i cmd="" cmd_at=0
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[i]} != -* ]]; then
            cmd=${words[i]}
            cmd_at=$i
            break
        fi
    done
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--help --version' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_calltrace_commands "$ct")" -- "$cur"))
        fi
        return
    fi

    local -A value=() kind=()
    local name v k
    while read -r name v k; do
        value[$name]=$v
        kind[$name]=$k
    done < <(_calltrace_options "$ct" "$cmd")
    local -a positionals
    mapfile -t positionals < <(_calltrace_positionals "$ct" "$cmd")

    # Walk the words: options, their values, positionals; the program (or
    # -p PID, or the record file) that function names come from.
    local w val pos="" at_cur="" npos=0 expect="" dashdash=0
    local program="" prog_at=0 pid="" file=""
    for ((i = cmd_at + 1; i < ${#words[@]}; i++)); do
        w=${words[i]}
        if [[ -n $expect ]]; then
            [[ ${value[$expect]} == PID ]] && pid=$w
            ((i == cword)) && at_cur="value $expect"
            expect=""
            continue
        fi
        if ((i == cword)) && [[ $split == true ]]; then
            at_cur="value $prev"
            continue
        fi
        if ((!dashdash)) && [[ $w == -?* || ($w == - && $i == "$cword") ]]; then
            if ((i == cword)); then
                at_cur=option
            elif [[ $w == -- ]]; then
                dashdash=1
            else
                val=""
                if [[ $w == --* ]]; then
                    name=${w%%=*}
                    [[ $w == *=* ]] && val=${w#*=}
                else # -X, -Xvalue
                    name=${w:0:2}
                    val=${w:2}
                fi
                if [[ ${value[$name]-} != "" && ${value[$name]} != - ]]; then
                    [[ -z $val ]] && expect=$name
                    [[ ${value[$name]} == PID ]] && pid=$val
                fi
            fi
            continue
        fi
        # a positional argument: its name from the Usage line (GLOB... repeats)
        if ((npos < ${#positionals[@]})); then
            pos=${positionals[npos]}
            [[ $pos == *... ]] || ((npos++))
        fi
        case ${pos%...} in
            PROGRAM) # the rest of the line is the program's
                program=$w
                prog_at=$i
                break
                ;;
            BINARY) program=$w ;;
            *) [[ ${kind[@${pos%...}]-} == record ]] && file=$w ;;
        esac
        ((i == cword)) && at_cur="positional ${pos%...}"
    done
    if ((prog_at && cword >= prog_at)); then
        _command_offset "$prog_at"
        return
    fi

    # Where function names come from: the program, -p PID's binary, the
    # record file (the default one if none is given).
    local fsrc="" fwhat=""
    if [[ -n $program ]]; then
        fsrc=binary
        fwhat=$program
        [[ $fwhat == */* ]] || fwhat=$(type -P "$fwhat") || fwhat=$program
    elif [[ -n $pid ]]; then
        fsrc=binary
        fwhat=/proc/$pid/exe
    elif [[ ${kind[@FILE]-}${kind[@RECORD]-} == *record* ]]; then
        fsrc=record
        fwhat=${file:-calltrace.data}
    fi

    local arg=${at_cur#* }
    case ${at_cur%% *} in
        option)
            local -a opts=()
            for name in "${!value[@]}" --help; do
                [[ $name == "$cur"* && $name == -* ]] && opts+=("$name")
            done
            COMPREPLY=("${opts[@]}")
            ;;
        value)
            v=${value[$arg]-}
            case $v in
                N | T | TIME | SIZE) ;;
                PID) _pids ;;
                GLOB* | G) [[ -n $fsrc ]] && _calltrace_functions "$ct" "$fsrc" "$fwhat" ;;
                *\|*) COMPREPLY=($(compgen -W "${v//|/ }" -- "$cur")) ;;
                *)
                    if [[ ${kind[$arg]} == record ]]; then
                        _filedir data
                    elif [[ $v == @(FILE|DIR|PATH) ]]; then
                        _filedir
                    else # NAME, URL: nothing to offer unless calltrace names the values
                        COMPREPLY=($(compgen -W "$(_calltrace_choices "$ct" "$cmd" "$arg")" -- "$cur"))
                    fi
                    ;;
            esac
            ;;
        positional)
            case $arg in
                BINARY) _filedir ;;
                GLOB | G) [[ -n $fsrc ]] && _calltrace_functions "$ct" "$fsrc" "$fwhat" ;;
                [A-Z]*) if [[ ${kind[@$arg]-} == record ]]; then _filedir data; else _filedir; fi ;;
            esac
            ;;
    esac
    __ltrim_colon_completions "$cur"
} &&
    complete -F _calltrace calltrace
