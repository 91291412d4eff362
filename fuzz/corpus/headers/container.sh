#!/bin/bash
#gpuq image=nvcr.io/nvidia/pytorch:24.01-py3 pull=always
#gpuq container-user=1000:1000 done-if='test -s out'
python train.py
