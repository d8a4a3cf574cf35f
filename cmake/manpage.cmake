# cmake/manpage.cmake — write meshplan(1) in roff from the CLI's own help texts: `meshplan help`
# for the synopsis of the commands, then `meshplan COMMAND --help` for each command, so the page
# lists exactly the commands and options the binary takes.
#   cmake -DMESHPLAN=build/meshplan -DOUT=build/meshplan.1 -DVERSION=0.1.0 -P cmake/manpage.cmake

cmake_minimum_required(VERSION 3.18) # policies: quoted "help" is a string, not a variable

# roff: a backslash is written \e; a line may not start with '.' or '\'' (request characters).
function(roff_escape var text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${MESHPLAN} help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR help STREQUAL "")
  message(FATAL_ERROR "manpage: `${MESHPLAN} help` failed (${rc})")
endif()
# The command names: the "commands:" list's lines that start with two blanks and a letter.
string(REGEX MATCH "\ncommands:\n.*" listing "${help}")
string(REGEX REPLACE "^\ncommands:" "" listing "${listing}")
string(REGEX REPLACE "\n[^ \n].*" "" listing "${listing}")
string(REGEX MATCHALL "\n  [a-z][a-z0-9-]*" names "${listing}")
set(commands "")
foreach(n ${names})
  string(STRIP "${n}" n)
  if(NOT n STREQUAL "help")
    execute_process(COMMAND ${MESHPLAN} ${n} --help OUTPUT_VARIABLE text RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "manpage: `${MESHPLAN} ${n} --help` failed (${rc})")
    endif()
    roff_escape(text "${text}")
    string(APPEND commands ".SS ${n}\n.nf\n${text}.fi\n")
  endif()
endforeach()
roff_escape(help "${help}")
string(TIMESTAMP today "%Y-%m-%d" UTC)
file(WRITE ${OUT} ".TH MESHPLAN 1 \"${today}\" \"meshplan ${VERSION}\" \"User Commands\"
.SH NAME
meshplan \\- predict and plan distributed LLM training on GPU clusters
.SH SYNOPSIS
.B meshplan
.I command
[\\fIoptions\\fR]
.SH DESCRIPTION
meshplan predicts how a distributed LLM training job behaves on a given cluster: memory per GPU
by component and per pipeline stage, step time with its parts, tokens/s, TFLOP/s per GPU,
MFU/HFU and the bottleneck, from a model, a cluster and a parallel plan.
Run \\fBmeshplan predict\\fR with no options for the built-in default job
(Llama 3 70B on 64 H100).
.PP
.nf
${help}.fi
.SH COMMANDS
${commands}.SH EXIT STATUS
0 success (an infeasible plan is an answer: \\fBfeasible: false\\fR with the reasons);
2 bad usage or input, with a message naming the field, the value and what was expected;
1 internal error.
.SH FILES
The catalog (GPUs, links, nodes, models) and the shipped cluster descriptions are built into the
binary; \\fB\\-\\-catalog FILE\\fR and \\fB\\-\\-cluster FILE\\fR add your own.
.SH SEE ALSO
The C library: \\fBpkg-config \\-\\-cflags \\-\\-libs meshplan\\fR and
.IR meshplan/meshplan.h ;
the Python package in python/ of the source tree.
")
