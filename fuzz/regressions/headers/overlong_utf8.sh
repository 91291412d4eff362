#!/bin/bash
#gpuq name=cafÃ© lane=rÁ©seaurequ
# uq-oouT
true
