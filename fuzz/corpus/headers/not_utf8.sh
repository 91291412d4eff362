#!/bin/bash
#gpuq gpus=1
printf "ÿþ"
