#!/bin/bash
# A stand-in training job: prints the GPUs it holds and counts steps.
steps=20
lr=3e-4
echo "training with lr=$lr for $steps steps"
