#!/bin/sh
#gpuq requires="test \"$(cat f)\" = \`ok\`" done_if='a b' # a trailing comment
#gpuq requires=test\ -f\ x not-before=1764410400000 share=no hold=yes
#gpuq priority=low lanes=net , cpu
cmd
