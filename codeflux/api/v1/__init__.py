"""Generated code for the protobuf package codeflux.v1. Do not edit; see codeflux.api.
"""
